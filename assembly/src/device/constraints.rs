//! [`DeviceConstraints`]: the Dirichlet constraints of [`Constraints`] on the device (kernels in
//! `assembly/cuda/constraints.cu`): zeroing and copying the constrained entries, writing the
//! prescribed values (components and twists) at a load factor, and the symmetric elimination in
//! the device tangent. Each is the same operation as on the host, so results are bit-identical.
//!
//! Per load step ([`DeviceConstraints::set_step`], after [`Constraints::set_time`] and
//! [`Constraints::set_own_factor`] on the host): the factors of entries on load curves of their own
//! go up as scalars, and the values of expressions of the time `t` are evaluated by the host at
//! the set's nodes at that time and uploaded (24 bytes per node of such a set per load step, never
//! per Newton iteration); the device writes them as they are (not scaled by the load factor), as
//! the host does.

use std::sync::Arc;

use rayon::prelude::*;

use linalg::gpu::{CudaContext, DeviceBsr, DeviceBuffer};
use linalg::gpu::{KernelArg, KernelModule, LaunchShape};
use linalg::BlockPattern;

use super::elements::check;
use crate::constraints::unit;
use crate::{rotation_matrix, AssemblyError, Constraints, Prescribed};

const CONSTRAINTS_SOURCE: KernelModule = KernelModule {
    name: "assembly/constraints.cu",
    text: include_str!("../../cuda/constraints.cu"),
    fmad: false,
};

const THREADS: u32 = 256;

fn shape(n: usize) -> LaunchShape {
    LaunchShape::one_thread_each(n, THREADS)
}

/// One prescribed set on the device.
enum DevicePrescribed {
    Components {
        nodes: DeviceBuffer<u32>,
        bits: u32,
        values: [f64; 3],
    },
    /// Values of an expression of the reference position, per node and component (3 per node,
    /// evaluated at upload; only the load factor goes up per call). Components in `timed_bits`
    /// use the time: their values are those at the time of the last [`DeviceConstraints::set_step`]
    /// and are written unscaled.
    Field {
        nodes: DeviceBuffer<u32>,
        bits: u32,
        timed_bits: u32,
        values: DeviceBuffer<f64>,
    },
    Twist {
        nodes: DeviceBuffer<u32>,
        axis: [f64; 3],
        center: [f64; 3],
        angle: f64,
        axial: f64,
    },
}

/// [`Constraints`] uploaded once for one tangent pattern: the mask, the blocks the elimination
/// writes, the prescribed node sets and the reference coordinates (for twists).
pub struct DeviceConstraints {
    ctx: Arc<CudaContext>,
    n_nodes: usize,
    bits: DeviceBuffer<u32>,
    /// The constrained components `3 node + c`, ascending (the mask's set bits), on the host
    /// and on the GPU.
    dofs: Vec<u32>,
    device_dofs: DeviceBuffer<u32>,
    touched_slots: DeviceBuffer<u32>,
    touched_flags: DeviceBuffer<u32>,
    prescribed: Vec<DevicePrescribed>,
    /// Per entry of `prescribed`: the factor of its own load curve (`None`: the load factor).
    own_factors: Vec<Option<f64>>,
    coords: DeviceBuffer<f64>,
}

/// The values of a field prescription at `nodes` and time `t`, 3 per node (zero for a free
/// component): what [`Constraints::write_prescribed`] evaluates before scaling.
fn field_values(
    nodes: &[usize],
    values: &[Option<crate::PositionFn>; 3],
    coords: &[[f64; 3]],
    t: f64,
) -> Vec<f64> {
    nodes
        .iter()
        .flat_map(|&node| {
            values
                .each_ref()
                .map(|v| v.as_ref().map_or(0.0, |v| (v.f)(coords[node], t)))
        })
        .collect()
}

/// Bit `c` set iff component `c` is `Some` and `pick` holds for it.
fn component_bits<T>(values: &[Option<T>; 3], pick: impl Fn(&T) -> bool) -> u32 {
    (0..3)
        .filter(|&c| values[c].as_ref().is_some_and(&pick))
        .fold(0, |m, c| m | 1 << c)
}

/// The slots of the blocks in a constrained row or column of `pattern` (ascending), as
/// `DofMask::elimination_plan` finds them, and each one's flags: the row's mask bits, the
/// column's shifted by 8, bit 16 on the diagonal. Rows are scanned in parallel chunks, joined in
/// row order.
fn touched_blocks(pattern: &BlockPattern, bits: &[u32]) -> (Vec<u32>, Vec<u32>) {
    const ROWS_A_CHUNK: usize = 4096;
    let chunks: Vec<(Vec<u32>, Vec<u32>)> = (0..bits.len().div_ceil(ROWS_A_CHUNK))
        .into_par_iter()
        .map(|chunk| {
            let (mut slots, mut flags) = (Vec::new(), Vec::new());
            let rows = chunk * ROWS_A_CHUNK..bits.len().min((chunk + 1) * ROWS_A_CHUNK);
            for i in rows {
                let first = pattern.row_ptr()[i];
                for (t, &j) in pattern.row(i).iter().enumerate() {
                    let (rb, cb) = (bits[i], bits[j as usize]);
                    if rb != 0 || cb != 0 {
                        slots.push((first + t) as u32);
                        flags.push(rb | cb << 8 | u32::from(j as usize == i) << 16);
                    }
                }
            }
            (slots, flags)
        })
        .collect();
    let (slots, flags) = chunks.into_iter().unzip::<_, _, Vec<_>, Vec<_>>();
    (slots.concat(), flags.concat())
}

/// The components `3 i + c` whose bit `c` is set in `bits[i]`, ascending (nodes in parallel
/// chunks, joined in node order).
fn constrained_dofs(bits: &[u32]) -> Vec<u32> {
    const NODES_A_CHUNK: usize = 16384;
    bits.par_chunks(NODES_A_CHUNK)
        .enumerate()
        .map(|(chunk, bits)| {
            let first = chunk * NODES_A_CHUNK;
            bits.iter()
                .enumerate()
                .flat_map(|(i, &b)| {
                    (0..3u32)
                        .filter(move |c| b >> c & 1 == 1)
                        .map(move |c| 3 * (first + i) as u32 + c)
                })
                .collect::<Vec<u32>>()
        })
        .collect::<Vec<_>>()
        .concat()
}

impl DeviceConstraints {
    /// Uploads `constraints` for matrices on `pattern` (square, one block row per node) over nodes
    /// at `coords`.
    pub fn new(
        ctx: &Arc<CudaContext>,
        constraints: &Constraints,
        pattern: &BlockPattern,
        coords: &[[f64; 3]],
    ) -> Result<Self, AssemblyError> {
        let mask = constraints.dof_mask();
        let n = mask.n_blocks();
        check("constraint mask nodes", n, coords.len())?;
        check("tangent block rows", n, pattern.n_block_rows())?;
        let bits: Vec<u32> = (0..n)
            .into_par_iter()
            .map(|i| mask.bits(i) as u32)
            .collect();
        let (slots, flags) = touched_blocks(pattern, &bits);
        let dofs = constrained_dofs(&bits);
        let node_list = |nodes: &[usize]| -> Result<DeviceBuffer<u32>, AssemblyError> {
            let v: Vec<u32> = nodes.iter().map(|&x| x as u32).collect();
            Ok(ctx.upload(&v)?)
        };
        let prescribed = constraints
            .prescribed()
            .iter()
            .map(|p| {
                Ok(match p {
                    Prescribed::Components { nodes, values, .. } => DevicePrescribed::Components {
                        nodes: node_list(nodes)?,
                        bits: component_bits(values, |_| true),
                        values: values.map(|v| v.unwrap_or(0.0)),
                    },
                    Prescribed::Field { nodes, values, .. } => DevicePrescribed::Field {
                        nodes: node_list(nodes)?,
                        bits: component_bits(values, |_| true),
                        timed_bits: component_bits(values, |v| v.uses_time),
                        values: ctx.upload(&field_values(
                            nodes,
                            values,
                            coords,
                            constraints.time(),
                        ))?,
                    },
                    Prescribed::Twist {
                        nodes,
                        axis,
                        center,
                        angle,
                        axial,
                        ..
                    } => DevicePrescribed::Twist {
                        nodes: node_list(nodes)?,
                        axis: *axis,
                        center: *center,
                        angle: *angle,
                        axial: *axial,
                    },
                })
            })
            .collect::<Result<Vec<_>, AssemblyError>>()?;
        Ok(Self {
            ctx: ctx.clone(),
            n_nodes: n,
            bits: ctx.upload(&bits)?,
            device_dofs: ctx.upload(&dofs)?,
            dofs,
            touched_slots: ctx.upload(&slots)?,
            touched_flags: ctx.upload(&flags)?,
            prescribed,
            own_factors: constraints.own_factors().to_vec(),
            coords: ctx.upload(coords.as_flattened())?,
        })
    }

    /// Takes the load step's state of `constraints` (the ones uploaded, after
    /// [`Constraints::set_time`] and [`Constraints::set_own_factor`]): the own factors (scalars)
    /// and, for field sets with a component of the time, the values at its time at the set's
    /// nodes at `coords` (evaluated here, uploaded: 24 bytes per node). Call once per load step.
    pub fn set_step(
        &mut self,
        constraints: &Constraints,
        coords: &[[f64; 3]],
    ) -> Result<(), AssemblyError> {
        check(
            "device constraints: prescribed sets",
            self.prescribed.len(),
            constraints.prescribed().len(),
        )?;
        self.own_factors = constraints.own_factors().to_vec();
        for (device, host) in self.prescribed.iter_mut().zip(constraints.prescribed()) {
            if let (
                DevicePrescribed::Field {
                    timed_bits, values, ..
                },
                Prescribed::Field {
                    nodes,
                    values: fields,
                    ..
                },
            ) = (device, host)
            {
                if *timed_bits != 0 {
                    let now = field_values(nodes, fields, coords, constraints.time());
                    self.ctx.upload_into(&now, values)?;
                }
            }
        }
        Ok(())
    }

    /// Blocks the elimination writes.
    pub fn n_touched(&self) -> usize {
        self.touched_slots.len()
    }

    fn check_vector(&self, what: &'static str, v: &DeviceBuffer<f64>) -> Result<(), AssemblyError> {
        check(what, 3 * self.n_nodes, v.len())
    }

    /// Sets the constrained entries of `v` to zero.
    pub fn zero(&self, v: &mut DeviceBuffer<f64>) -> Result<(), AssemblyError> {
        self.check_vector("device constraints: vector", v)?;
        CONSTRAINTS_SOURCE.launch(
            &self.ctx,
            &[],
            "mask_zero",
            shape(3 * self.n_nodes),
            &mut [
                KernelArg::U32(self.n_nodes as u32),
                KernelArg::U32s(&self.bits),
                KernelArg::F64sMut(v),
            ],
        )?;
        Ok(())
    }

    /// Copies the constrained entries of `from` into `to`.
    pub fn copy(
        &self,
        from: &DeviceBuffer<f64>,
        to: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.check_vector("device constraints: from", from)?;
        self.check_vector("device constraints: to", to)?;
        CONSTRAINTS_SOURCE.launch(
            &self.ctx,
            &[],
            "mask_copy",
            shape(3 * self.n_nodes),
            &mut [
                KernelArg::U32(self.n_nodes as u32),
                KernelArg::U32s(&self.bits),
                KernelArg::F64s(from),
                KernelArg::F64sMut(to),
            ],
        )?;
        Ok(())
    }

    /// The constrained entries of `from` written into `to` (a host vector of the same length;
    /// its free entries untouched): only those entries come down, 8 bytes each (a converged
    /// state's reactions, whose free entries are zero).
    pub fn copy_to_host(
        &self,
        from: &DeviceBuffer<f64>,
        to: &mut [f64],
    ) -> Result<(), AssemblyError> {
        self.check_vector("device constraints: from", from)?;
        check(
            "device constraints: host vector",
            3 * self.n_nodes,
            to.len(),
        )?;
        if self.dofs.is_empty() {
            return Ok(());
        }
        let mut compact = self.ctx.zeros::<f64>(self.dofs.len())?;
        linalg::gpu::gather_blocks(&self.ctx, 1, &self.device_dofs, from, &mut compact)?;
        let values = self.ctx.download(&compact)?;
        for (&dof, v) in self.dofs.iter().zip(values) {
            to[dof as usize] = v;
        }
        Ok(())
    }

    /// Symmetric elimination in `k` (3x3 blocks on the pattern given at construction):
    /// constrained rows and columns become zero, their diagonal entries keep a fixed fraction of their magnitude
    /// (the host's `linalg::DofMask::eliminate`).
    pub fn eliminate(&self, k: &mut DeviceBsr) -> Result<(), AssemblyError> {
        check(
            "device elimination: block size",
            9,
            k.block_rows() * k.block_cols(),
        )?;
        check(
            "device elimination: block rows",
            self.n_nodes,
            k.pattern().n_block_rows(),
        )?;
        let n = self.touched_slots.len();
        CONSTRAINTS_SOURCE.launch(
            &self.ctx,
            &[],
            "mask_eliminate",
            shape(9 * n),
            &mut [
                KernelArg::U32(n as u32),
                KernelArg::U32s(&self.touched_slots),
                KernelArg::U32s(&self.touched_flags),
                KernelArg::F64(linalg::ELIMINATED_DIAGONAL_FRACTION),
                KernelArg::F64sMut(k.values_mut()),
            ],
        )?;
        Ok(())
    }

    /// Writes the prescribed displacement at `load_factor` into the constrained entries of `u`
    /// ([`Constraints::write_prescribed`] on the device; later sets override earlier ones). Only
    /// scalars go up: the rotation of each twist at this load factor.
    pub fn write_prescribed(
        &self,
        load_factor: f64,
        u: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.check_vector("prescribed displacement vector", u)?;
        let common = load_factor;
        for (p, own) in self.prescribed.iter().zip(&self.own_factors) {
            let load_factor = own.unwrap_or(common);
            match p {
                DevicePrescribed::Components {
                    nodes,
                    bits,
                    values,
                } => CONSTRAINTS_SOURCE.launch(
                    &self.ctx,
                    &[],
                    "prescribe_components",
                    shape(3 * nodes.len()),
                    &mut [
                        KernelArg::U32(nodes.len() as u32),
                        KernelArg::U32s(nodes),
                        KernelArg::U32(*bits),
                        KernelArg::F64(load_factor),
                        KernelArg::F64(values[0]),
                        KernelArg::F64(values[1]),
                        KernelArg::F64(values[2]),
                        KernelArg::F64sMut(u),
                    ],
                )?,
                DevicePrescribed::Field {
                    nodes,
                    bits,
                    timed_bits,
                    values,
                } => CONSTRAINTS_SOURCE.launch(
                    &self.ctx,
                    &[],
                    "prescribe_field",
                    shape(3 * nodes.len()),
                    &mut [
                        KernelArg::U32(nodes.len() as u32),
                        KernelArg::U32s(nodes),
                        KernelArg::U32(*bits),
                        KernelArg::U32(*timed_bits),
                        KernelArg::F64(load_factor),
                        KernelArg::F64s(values),
                        KernelArg::F64sMut(u),
                    ],
                )?,
                DevicePrescribed::Twist {
                    nodes,
                    axis,
                    center,
                    angle,
                    axial,
                } => {
                    let r = rotation_matrix(axis, load_factor * angle);
                    let n = unit(axis);
                    let s = n.map(|ni| load_factor * axial * ni);
                    let mut args = vec![
                        KernelArg::U32(nodes.len() as u32),
                        KernelArg::U32s(nodes),
                        KernelArg::F64s(&self.coords),
                    ];
                    args.extend(r.as_flattened().iter().map(|&v| KernelArg::F64(v)));
                    args.extend(center.iter().map(|&v| KernelArg::F64(v)));
                    args.extend(s.iter().map(|&v| KernelArg::F64(v)));
                    args.push(KernelArg::F64sMut(u));
                    CONSTRAINTS_SOURCE.launch(
                        &self.ctx,
                        &[],
                        "prescribe_twist",
                        shape(nodes.len()),
                        &mut args,
                    )?
                }
            }
        }
        Ok(())
    }
}

/// Compiles the constraint kernels for `arch` (`"sm_90"`) with NVRTC alone (no device needed) and
/// returns the cubin's size; a rejected source returns NVRTC's log.
#[cfg(test)]
pub(crate) fn compile_constraints_source(arch: &str) -> Result<usize, AssemblyError> {
    Ok(CONSTRAINTS_SOURCE.compile_only(&[], arch)?)
}
