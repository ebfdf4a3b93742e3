//! The output writer's cost per field group for one state of every output field
//! ([`writer_timings`], measured by `hexfem bench writer`): each field the writer derives, alone;
//! the step's writes with every value ready; the pipeline ([`StateWrite::write`]), its
//! derivations alone and whole (derive and write).

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use config::OutputField;
use io::{CellTensor, StepData};
use linalg::Vector;
use rayon::prelude::*;
use serde::Serialize;
use solve::problem::Problem;

use super::{Derived, StateWrite, STRAINS};
use crate::error::fail;
use crate::fields::StrainCells;
use crate::nodal::NodeCells;
use crate::run::{create_results, von_mises_of, CellOutputs, StateSnapshot, StepStamp};
use crate::Result;

/// Seconds per field group of one state of every output field of a neo-Hookean Q1 box
/// ([`writer_timings`]), each the best of the repeated runs after one warm-up run (the
/// statistic of `hexfem bench`).
#[derive(Clone, Debug, Serialize)]
pub struct WriterTimings {
    /// Nodes of the mesh.
    pub nodes: usize,
    /// Cells of the mesh.
    pub cells: usize,
    /// Threads of the rayon pool the derivations ran on.
    pub threads: usize,
    /// Bytes of one state's values of every field (8 a value: 19 values a node, 42 a cell).
    pub state_bytes: usize,
    /// Size of the HDF5 file at the end: the mesh and every step written (the warm-up's too).
    pub h5_bytes: u64,
    /// The nodal average of the Cauchy stress (the cells around each node found before, as
    /// for every state of a run but its first).
    pub nodal_average_s: f64,
    /// The nodal von Mises stress, from the nodal average.
    pub nodal_von_mises_s: f64,
    /// The output field `strain` (the material model's measure) of every cell.
    pub strain_s: f64,
    /// The output field `green_lagrange_strain` of every cell.
    pub green_lagrange_strain_s: f64,
    /// The output field `logarithmic_strain` of every cell.
    pub logarithmic_strain_s: f64,
    /// The principal stresses of every cell.
    pub principal_cells_s: f64,
    /// The principal stresses of every node, from the nodal average.
    pub principal_nodes_s: f64,
    /// The step written whole, every value ready ([`io::ResultsWriter::write_step`]: reserved,
    /// written, committed).
    pub step_writes_s: f64,
    /// The pipeline's derivations alone, of a state whose strains are left to the writer (a
    /// CPU run's): nodal average and von Mises stress, the three strains, the principal
    /// stresses of cells and nodes.
    pub pipeline_derivations_s: f64,
    /// The pipeline: that state derived and written (`StateWrite::write`).
    pub pipeline_s: f64,
}

impl WriterTimings {
    /// The fields derived one after the other, then the step written: the sum of the derived
    /// groups and the step's writes (what the writer costs without the pipeline, one field
    /// after the other).
    pub fn serial_s(&self) -> f64 {
        self.nodal_average_s
            + self.nodal_von_mises_s
            + self.strain_s
            + self.green_lagrange_strain_s
            + self.logarithmic_strain_s
            + self.principal_cells_s
            + self.principal_nodes_s
            + self.step_writes_s
    }
}

/// Times the output writer on one state of every output field of a neo-Hookean Q1 box of
/// `cells`^3 cells (a stretched, sheared and twisted displacement), writing into `dir` (which
/// must exist; its results files `writer.*` are left there): each group the best of `repeats`
/// runs after one warm-up run. The states are made before the timing; the files hold the mesh,
/// then `2 (repeats + 1)` steps.
pub fn writer_timings(cells: usize, repeats: usize, dir: &Path) -> Result<WriterTimings> {
    let config = config::load_str(
        &format!(
            "mesh:\n  box: {{ cells: [{cells}, {cells}, {cells}], lower: [0, 0, 0], \
            upper: [2, 1, 1] }}\n\
            materials:\n  - {{ model: neo_hookean, young_modulus: 10.0, poisson_ratio: 0.3 }}\n\
            boundary:\n  dirichlet:\n    - {{ set: zmin, x: 0.0, y: 0.0, z: 0.0 }}\n\
            output: {{ fields: [{}] }}\n",
            super::FIELDS.map(|(f, _)| f.name()).join(", ")
        ),
        Path::new("writer-bench.yaml"),
        &[],
    )?;
    let problem = crate::locate::build_problem(&config)?;
    let mesh = Arc::new(problem.mesh.clone());
    let Some(strain_cells) = StrainCells::of(&problem, Arc::clone(&mesh)).map(Arc::new) else {
        fail!("the writer's benchmark: the strains cannot be computed on the writer");
    };
    let u = displacement(&problem, 1.0);
    let reaction = displacement(&problem, -7.0);
    let u_nodes: Vec<[f64; 3]> = u.host()?.as_chunks::<3>().0.to_vec();
    let reaction_nodes: Vec<[f64; 3]> = reaction.host()?.as_chunks::<3>().0.to_vec();
    // the cells around each node, made once as in a run
    let node_cells = Arc::new(OnceLock::new());
    let plan = node_cells.get_or_init(|| NodeCells::of(&mesh));
    // every field computed first (the strains too)
    let all = CellOutputs::compute(&problem, &u, &config, false)?;
    let nodal_stress = plan.average(&all.cauchy)?;
    let nodal_vm: Vec<f64> = nodal_stress.par_iter().map(von_mises_of).collect();
    let principal = crate::fields::principal(&all.cauchy);
    let nodal_principal = crate::fields::principal(&nodal_stress);

    let nodal_average_s = best_of(repeats, || {
        std::hint::black_box(plan.average(&all.cauchy)?);
        Ok(())
    })?;
    let nodal_von_mises_s = best_of(repeats, || {
        std::hint::black_box(
            nodal_stress
                .par_iter()
                .map(von_mises_of)
                .collect::<Vec<_>>(),
        );
        Ok(())
    })?;
    let mut strain_s = [0.0; 3];
    for (s, field) in strain_s.iter_mut().zip(STRAINS) {
        *s = best_of(repeats, || {
            std::hint::black_box(strain_cells.strains(&u_nodes, field)?);
            Ok(())
        })?;
    }
    let principal_cells_s = best_of(repeats, || {
        std::hint::black_box(crate::fields::principal(&all.cauchy));
        Ok(())
    })?;
    let principal_nodes_s = best_of(repeats, || {
        std::hint::black_box(crate::fields::principal(&nodal_stress));
        Ok(())
    })?;

    let mut results = create_results(&config, &mesh, dir, "writer", &io::Faults::none())?;
    let strain = |f| {
        all.strains
            .iter()
            .find(|(g, _)| *g == f)
            .map(|(_, v)| v.as_slice())
    };
    let mut step = 0;
    let step_writes_s = best_of(repeats, || {
        step += 1;
        results.write_step(&StepData {
            step,
            load_factor: 1.0,
            displacement: Some(&u_nodes),
            reaction: Some(&reaction_nodes),
            cauchy_stress: Some(CellTensor::Full(&all.cauchy)),
            von_mises: Some(&all.von_mises),
            jacobian: Some(&all.jacobian),
            energy_density: Some(&all.energy_density),
            nodal_cauchy_stress: Some(&nodal_stress),
            nodal_von_mises: Some(&nodal_vm),
            strain: strain(OutputField::Strain),
            green_lagrange_strain: strain(OutputField::GreenLagrangeStrain),
            logarithmic_strain: strain(OutputField::LogarithmicStrain),
            principal_stress: Some(&principal),
            nodal_principal_stress: Some(&nodal_principal),
            next_increment: None,
            time: None,
        })?;
        Ok(())
    })?;

    // the states handed to the writer (their strains left to it, as a CPU run's), made before
    // the timing: one to derive again and again, one for each pipelined write
    let later = CellOutputs::compute(&problem, &u, &config, true)?;
    let state = |index| -> Result<StateWrite> {
        let stamp = StepStamp {
            index,
            load_factor: 1.0,
            next_increment: None,
            time: None,
        };
        Ok(StateWrite {
            output: config.output.clone(),
            mesh: Arc::clone(&mesh),
            node_cells: Arc::clone(&node_cells),
            strain_cells: Some(Arc::clone(&strain_cells)),
            energy_later: None,
            state: StateSnapshot::of(stamp, &u, &reaction, later.clone())?,
        })
    };
    let derived_only = state(0)?;
    let pipeline_derivations_s = best_of(repeats, || {
        derived_only.derive(&Derived::default(), &mut |_| {})
    })?;
    drop(derived_only);
    let mut jobs = (1..=repeats.max(1) + 1)
        .map(|k| state(step + k))
        .collect::<Result<Vec<_>>>()?;
    jobs.reverse();
    let pipeline_s = best_of(repeats, || match jobs.pop() {
        Some(job) => job.write(&mut results),
        None => fail!("the writer's benchmark ran out of states"),
    })?;
    Ok(WriterTimings {
        nodes: mesh.n_nodes(),
        cells: mesh.n_cells(),
        threads: rayon::current_num_threads(),
        state_bytes: 8 * (19 * mesh.n_nodes() + 42 * mesh.n_cells()),
        h5_bytes: std::fs::metadata(results.h5_path())?.len(),
        nodal_average_s,
        nodal_von_mises_s,
        strain_s: strain_s[0],
        green_lagrange_strain_s: strain_s[1],
        logarithmic_strain_s: strain_s[2],
        principal_cells_s,
        principal_nodes_s,
        step_writes_s,
        pipeline_derivations_s,
        pipeline_s,
    })
}

/// The best of `repeats` (at least one) timed runs of `f` after one warm-up run, seconds.
fn best_of(repeats: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// A stretched, sheared and twisted displacement of `problem`'s nodes, scaled by `s`.
pub(super) fn displacement(problem: &Problem, s: f64) -> Vector {
    let u: Vec<f64> = problem
        .mesh
        .coords
        .iter()
        .flat_map(|x| {
            [
                s * (0.1 * x[2] + 0.05 * x[0] - 0.03 * x[1] * x[2]),
                s * (-0.02 * x[1] + 0.04 * x[0] * x[2]),
                s * (0.03 * x[0] * x[2] + 0.01 * x[1]),
            ]
        })
        .collect();
    Vector::from_vec(u)
}
