#!/bin/bash
# usage: rss.sh PID OUTFILE: samples VmRSS (kB) every 100 ms until PID exits or OUTFILE.stop exists; writes the max
pid=$1; out=$2; maxr=0
while [ ! -e $out.stop ] && [ -e /proc/$pid ]; do
  r=$(awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null); r=${r:-0}
  [ "$r" -gt "$maxr" ] && maxr=$r
  sleep 0.1
done
echo $maxr > $out
