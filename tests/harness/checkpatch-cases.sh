#!/bin/bash
# Writes into DIR a copy of scripts/ and a series of five small patches for
# scripts/checkpatch.sh, whose exceptions must drop only what they should:
# 01 adds MAINTAINERS' F: mm/kdt/ and a file there (clean), 02 a file under
# it without touching MAINTAINERS (FILE_PATH_CHANGES, dropped), 03 a file
# elsewhere (FILE_PATH_CHANGES, kept), 04 an EM()/EMe() name list and its
# EM()/EMe() definitions (COMPLEX_MACRO, BRACKET_SPACE, dropped), 05 another
# macro with a complex value (COMPLEX_MACRO, kept).
# Usage: checkpatch-cases.sh DIR
set -e
dir=$1
mkdir -p "$dir/scripts" "$dir/patches"
cp "$(dirname "$0")"/../../scripts/*.sh "$dir/scripts/"
cd "$dir/patches"

# mkpatch FILE SUBJECT DIFFSTAT DIFF
mkpatch() {
	cat > "$1" <<EOF
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Harness Test <harness@localhost>
Date: Sun, 6 Dec 2026 00:00:00 +0000
Subject: [PATCH] $2

A patch the harness self-test gives checkpatch.sh.

Signed-off-by: Harness Test <harness@localhost>
---
$3
$4
-- 
2.39.5

EOF
}

# newfile PATH LINE...: the diff that creates PATH with the given lines.
newfile() {
	local p=$1
	shift
	printf 'diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n' \
		"$p" "$p" "$p" $#
	printf '+%s\n' "$@"
}

mkpatch 01.patch "mm/kdt: add a" " MAINTAINERS | 1 +
 mm/kdt/a.c  | 2 ++" "diff --git a/MAINTAINERS b/MAINTAINERS
index 1111111..2222222 100644
--- a/MAINTAINERS
+++ b/MAINTAINERS
@@ -1,3 +1,4 @@
 KDT
 M:	Harness Test <harness@localhost>
 S:	Maintained
+F:	mm/kdt/
$(newfile mm/kdt/a.c '// SPDX-License-Identifier: GPL-2.0' 'int kdt_a;')"
mkpatch 02.patch "mm/kdt: add b" " mm/kdt/b.c | 2 ++" \
	"$(newfile mm/kdt/b.c '// SPDX-License-Identifier: GPL-2.0' 'int kdt_b;')"
mkpatch 03.patch "mm/other: add c" " mm/other/c.c | 2 ++" \
	"$(newfile mm/other/c.c '// SPDX-License-Identifier: GPL-2.0' 'int kdt_c;')"
mkpatch 04.patch "mm/kdt: a name list" " mm/kdt/d.h | 10 ++++++++++" \
	"$(newfile mm/kdt/d.h '/* SPDX-License-Identifier: GPL-2.0 */' \
		'#define KDT_NAMES			\' '	EM(KDT_A,	"a")		\' \
		'	EMe(KDT_B,	"b")' '' '#define EM(a, b)	[a] = b,' \
		'#define EMe(a, b)	[a] = b' '' 'int kdt_d;')"
mkpatch 05.patch "mm/kdt: a complex macro" " mm/kdt/e.h | 3 +++" \
	"$(newfile mm/kdt/e.h '/* SPDX-License-Identifier: GPL-2.0 */' \
		'#define KDT_BAD			\' '	KDT_A, KDT_B')"
printf '%s\n' 01.patch 02.patch 03.patch 04.patch 05.patch > series
