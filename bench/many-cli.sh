#!/bin/bash
# many-cli.sh LOGTOOL DIR TASK [RUNS]: medians (wall and CPU, perf stat)
# of logtool stat PREFIX, stat task=TASK and ls --limit 50 on the store
# DIR, warm page cache, with the load average, the marks and the delta the
# index holds (docs/performance.md, "Many sessions").
set -eu
lt=$1 d=$2 task=$3 r=${4:-15}
id=$(ls "$d" | grep -m1 '\.jsonl$')
med() {
	for _ in $(seq "$r"); do
		s=$(date +%s%N); "$lt" "$@" >/dev/null; e=$(date +%s%N)
		echo $(((e - s) / 100000))
	done | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms", a[int((NR+1)/2)]/10}'
}
cpu() { perf stat -r "$r" -x, -e task-clock "$lt" "$@" 2>&1 >/dev/null | tail -1 | cut -d, -f1; }
delta=0
if [ -f "$d/.cache/sessions.delta" ]; then delta=$(head -1 "$d/.cache/sessions.delta" | cut -f2 | cut -d' ' -f3); fi
echo "$d: $(ls "$d/.cache/sessions.d" | wc -l) marks, $delta sessions in the delta; load $(cut -d' ' -f1-3 /proc/loadavg)"
for q in "--version" "--dir $d stat --json ${id:0:24}" "--dir $d stat --json task=$task" "--dir $d ls --json --limit 50"; do
	# shellcheck disable=SC2086
	echo "$q: median $(med $q), CPU $(cpu $q) ms"
done
echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
