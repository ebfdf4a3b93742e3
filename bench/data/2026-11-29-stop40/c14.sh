#!/bin/bash
# stop 40 call C: new (306b40b) and stop 39's binary side by side in one call: bench gamg 66 CPU (2 cores) and GPU, mpirun -np 2 bench gamg 66 on the GPU, 104^3 runs alternated
cd .device/bin && gunzip -f hexfem.gz 2>/dev/null; cd ../..
gunzip -f .device-early/bin/*.gz 2>/dev/null
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
export HEXFEM_KERNEL_CACHE=/tmp/kcache
nccl=$(ls /usr/lib/x86_64-linux-gnu/libnccl.so.2* /usr/local/cuda*/lib64/libnccl.so.2* 2>/dev/null | head -n 1)
[ -z "$nccl" ] && nccl=$(find /usr /opt -name 'libnccl.so.2*' 2>/dev/null | head -n 1)
[ -n "$nccl" ] && { mkdir -p /tmp/hexfem-nccl; ln -sf "$nccl" /tmp/hexfem-nccl/libnccl.so; export LD_LIBRARY_PATH="/tmp/hexfem-nccl:$LD_LIBRARY_PATH"; }
NEW=$PWD/.device/bin/hexfem; OLD=$PWD/.device-early/bin/hexfem_old; chmod +x $OLD
mkdir -p $OUT /tmp/o; SECONDS=0
for b in new old new old; do H=$NEW; [ $b = old ] && H=$OLD
  timeout 60 $H bench gamg --problem ex56 --m 66 --device cuda --precision double --json > /tmp/g.json 2>/dev/null
  python3 -c "import json;d=json.load(open('/tmp/g.json'));r=d['renewal'];print('$b gamg cuda cold(2nd) %.4f recompute %.4f keep %.4f hot %.4f solve %.4f it %s' % (r['cold_s'],r['renewal_s'],r['other_mode_s'],d['setup_hot_s'],d['solve_hot_s'],d['iterations']))"
done
for b in new old; do H=$NEW; [ $b = old ] && H=$OLD
  RAYON_NUM_THREADS=8 timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -x RAYON_NUM_THREADS -np 2 $H bench gamg --problem ex56 --m 66 --device cuda --exchange auto --json > /tmp/m.json 2>/dev/null
  python3 -c "import json;d=json.load(open('/tmp/m.json'));print('$b mpi2 gamg cuda cold %.3f hot %.4f solve %.4f spmv %.5f it %s' % (d['setup_cold_s'],d['setup_hot_s'],d['solve_hot_s'],d['spmv_s'],d['iterations']))"
done
for b in new old new old; do H=$NEW; [ $b = old ] && H=$OLD
  RAYON_NUM_THREADS=2 timeout 100 taskset -c 0,1 $H bench gamg --problem ex56 --m 66 --json > /tmp/c.json 2>/dev/null
  python3 -c "import json;d=json.load(open('/tmp/c.json'));print('$b gamg cpu2 cold %.3f hot %.3f solve %.3f it %s' % (d['setup_cold_s'],d['setup_hot_s'],d['solve_hot_s'],d['iterations']))"
done
C="--set device=cuda --set linear_solver.method=cg_amg --set mesh.box.cells=[104,104,104]"
ALL="output.fields=[displacement,reaction,cauchy_stress,von_mises,jacobian,energy_density,nodal_cauchy_stress,nodal_von_mises,strain,green_lagrange_strain,logarithmic_strain,principal_stress,nodal_principal_stress]"
for b in new old new old; do H=$NEW; [ $b = old ] && H=$OLD
  for f in "output.fields=[displacement]" "output.precision=double" "$ALL"; do
    timeout 60 $H run inputs/neo_hookean_block.yaml $C --set "$f" -o /tmp/o/r --overwrite -v > /tmp/r.txt 2>&1
    echo "$b ${f:0:40} $(sed -n '/where the time went/,$p' /tmp/r.txt | grep -E 'wall|kernel comp|  output  |converged|background' | sed 's/  */ /g' | tr '\n' ';')"
    rm -rf /tmp/o/r
  done
done
echo "end at ${SECONDS}s"
