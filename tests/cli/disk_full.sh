#!/bin/sh
# disk_full.sh BIN TOKENS CORPUS — a full disk is an error (exit 4, "no space left on device"), never
# a crash, and leaves no file behind: sg-tokenize and sg-train writing into a 1 MB tmpfs, sg-train
# into a tmpfs too full for its lock file (which it must not leave), the Markdown writer into a full
# one, and sg-info's stdout into a file of a full disk and into /dev/full (never exit 0). Needs to
# mount one (root); otherwise exit 77, which ctest reports as skipped.
BIN=$1 TOKENS=$2 CORPUS=$3
dir=$(mktemp -d /tmp/sg-disk-full-XXXXXX)
mount -t tmpfs -o size=1m tmpfs "$dir" 2>/dev/null || { rmdir "$dir"; echo "cannot mount a tmpfs: skipped"; exit 77; }
trap 'umount "$dir"; rmdir "$dir"' EXIT
status=0
check() {  # NAME CODE LOG
  if [ "$2" != 4 ]; then echo "$1: exit $2, expected 4"; cat "$3"; status=1; fi
  grep -qi "no space left on device" "$3" || { echo "$1: no 'no space left on device' in:"; cat "$3"; status=1; }
  left=$(ls -A "$dir" | grep -vx fill)
  [ -z "$left" ] || { echo "$1: left $left"; status=1; }
}
"$BIN/sg-tokenize" "$CORPUS" -o "$dir/tokens.h5" > /dev/null 2> "$dir.log"; check sg-tokenize $? "$dir.log"
"$BIN/sg-train" --tokens "$TOKENS" --tier tiny --set iterations=2 --set warmup=1 --set eval_interval=2 \
  -o "$dir/run.h5" > /dev/null 2> "$dir.log"; check sg-train $? "$dir.log"
# A disk with no byte left: the lock file's pid cannot be written, the Markdown and stdout writers fail.
head -c 2000000 /dev/zero > "$dir/fill" 2>/dev/null
"$BIN/sg-train" --tokens "$TOKENS" --tier tiny --set iterations=2 --set warmup=1 -o "$dir/run.h5" > /dev/null 2> "$dir.log"
check "sg-train (no room for its lock file)" $? "$dir.log"
"$BIN/sg-info" --tier all -o "$dir/tiers.md" > /dev/null 2> "$dir.log"; check "sg-info -o FILE (the text writer)" $? "$dir.log"
"$BIN/sg-info" --tier all > "$dir/stdout.txt" 2> "$dir.log"; code=$?; rm -f "$dir/stdout.txt"
check "sg-info > FILE (stdout)" $code "$dir.log"
"$BIN/sg-info" --tier all > /dev/full 2> "$dir.log"; check "sg-info > /dev/full" $? "$dir.log"
rm -f "$dir/fill" "$dir.log"
[ $status = 0 ] && echo "disk full: exit 4 with the reason, nothing left behind"
exit $status
