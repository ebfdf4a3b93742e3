#!/bin/bash
# stop 40 call 1: is the 104^3 every-field run bound by the per-step fdatasync? (stop 39's binary)
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; cd ../..
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
T=""; [ -x /usr/bin/time ] && T="/usr/bin/time -v"
H=$PWD/.device/bin/hexfem; mkdir -p $OUT; SECONDS=0
{ df -hT /tmp /dev/shm $PWD; nproc; free -g | head -2
  dd if=/dev/zero of=/tmp/ddtest bs=4M count=256 conv=fdatasync 2>&1 | tail -1
  dd if=/dev/zero of=/tmp/ddtest bs=4M count=256 2>&1 | tail -1; rm -f /tmp/ddtest
  dd if=/dev/zero of=/dev/shm/ddtest bs=4M count=256 conv=fdatasync 2>&1 | tail -1; rm -f /dev/shm/ddtest
} > $OUT/disk.txt 2>&1
ALL="output.fields=[displacement,reaction,cauchy_stress,von_mises,jacobian,energy_density,nodal_cauchy_stress,nodal_von_mises,strain,green_lagrange_strain,logarithmic_strain,principal_stress,nodal_principal_stress]"
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104]"
$H run inputs/neo_hookean_block.yaml $C --set output.fields=[displacement] -o /tmp/warm --overwrite > /dev/null 2>&1
for dir in /tmp/o /dev/shm/o; do
 for f in "$ALL" "output.fields=[displacement]"; do
  mkdir -p $dir
  $T $H run inputs/neo_hookean_block.yaml $C --set "$f" -o $dir/r --overwrite -v > /tmp/r.txt 2>/tmp/time.txt; rc=$?
  echo "== $dir $f rc $rc $(du -sb $dir/r/*.h5 | cut -f1) bytes"; sed -n '/where the time went/,$p' /tmp/r.txt
  grep -E "Elapsed|Maximum resident|Percent of CPU|File system outputs|context switches" /tmp/time.txt
  rm -rf $dir/r
 done
done > $OUT/sync.txt 2>&1
echo "end at ${SECONDS}s"; cat $OUT/disk.txt; grep -E "==|wall|output|converged|background|Elapsed|Percent" $OUT/sync.txt
