//! One state's output on the output writer's thread, as a pipeline: the fields the state does not
//! hold yet (the nodal averages, principal stresses, the strains left to the writer, a first
//! state's cell fields) are derived on a helper thread, each in parallel on the rayon pool,
//! while the writer's thread writes the fields the state holds; each derived field is written
//! as soon as it is ready. The writes are serial (one file), the derivations parallel, so a
//! state costs about its writes where the pool has cores to spare (a GPU run's).
//!
//! The file is the one a whole-field write gives byte for byte: every dataset is reserved in
//! the step's dataset order before any value is written ([`io::ResultsWriter::write_step_in_pieces`]),
//! the values are the same bits whatever the order of the writes, and the step is committed
//! (data synced, then the superblock) only once every value is written. With `.vtu` output,
//! which needs whole fields, every field is derived first and the step written whole.

use std::sync::mpsc;
use std::sync::{Arc, OnceLock};

use config::{OutputField, OutputParams};
use io::{CellTensor, ResultsWriter, StepData, StepField, StepHeader};
use mesh::HexMesh;
use rayon::prelude::*;

use crate::error::{fail, WriterFailure};
use crate::fields::StrainCells;
use crate::nodal::NodeCells;
use crate::run::{von_mises_of, CellOutputs, StateSnapshot, StepStamp};
use crate::Result;

pub(crate) mod timings;

/// The step fields in dataset order, with the output field each is written for (the serial
/// writer's and the ranks' order).
pub(crate) const FIELDS: [(OutputField, StepField); 13] = [
    (OutputField::Displacement, StepField::Displacement),
    (OutputField::Reaction, StepField::Reaction),
    (OutputField::CauchyStress, StepField::CauchyStress),
    (OutputField::VonMises, StepField::VonMises),
    (OutputField::Jacobian, StepField::Jacobian),
    (OutputField::EnergyDensity, StepField::EnergyDensity),
    (OutputField::NodalCauchyStress, StepField::NodalCauchyStress),
    (OutputField::NodalVonMises, StepField::NodalVonMises),
    (OutputField::Strain, StepField::Strain),
    (
        OutputField::GreenLagrangeStrain,
        StepField::GreenLagrangeStrain,
    ),
    (OutputField::LogarithmicStrain, StepField::LogarithmicStrain),
    (OutputField::PrincipalStress, StepField::PrincipalStress),
    (
        OutputField::NodalPrincipalStress,
        StepField::NodalPrincipalStress,
    ),
];

/// The strain fields, in the order of [`Derived::strains`].
const STRAINS: [OutputField; 3] = [
    OutputField::Strain,
    OutputField::GreenLagrangeStrain,
    OutputField::LogarithmicStrain,
];

/// What the writer needs to write one state: the state and what derives its other fields.
pub(crate) struct StateWrite {
    /// The fields to write (`output.fields`).
    pub(crate) output: OutputParams,
    /// The writer's copy of the mesh.
    pub(crate) mesh: Arc<HexMesh>,
    /// The cells around each node, made the first time a nodal field is written.
    pub(crate) node_cells: Arc<OnceLock<NodeCells>>,
    /// What computes the cell fields and strains left to the writer (`None` where none is).
    pub(crate) strain_cells: Option<Arc<StrainCells>>,
    /// Where a first state whose cell fields the writer computes gives its strain energy.
    pub(crate) energy_later: Option<Arc<OnceLock<f64>>>,
    pub(crate) state: StateSnapshot,
}

/// The fields derived on the writer, each set once by the deriving thread.
#[derive(Default)]
struct Derived {
    /// A first state's cell fields ([`CellOutputs::fields_later`]).
    cells: OnceLock<CellOutputs>,
    nodal: OnceLock<Vec<[f64; 9]>>,
    nodal_von_mises: OnceLock<Vec<f64>>,
    /// The strains left to the writer, by [`STRAINS`] position.
    strains: [OnceLock<Vec<[f64; 9]>>; 3],
    principal: OnceLock<Vec<[f64; 3]>>,
    nodal_principal: OnceLock<Vec<[f64; 3]>>,
}

impl StateWrite {
    /// Derives the state's other fields and writes the step (see the module's description).
    pub(crate) fn write(self, results: &mut ResultsWriter) -> Result<()> {
        let derived = Derived::default();
        if results.pvd_path().is_some() {
            self.derive(&derived, &mut |_| {})?;
            return self.write_whole(&derived, results);
        }
        let StepStamp {
            index,
            load_factor,
            next_increment,
            time,
        } = self.state.stamp;
        let wanted: Vec<(OutputField, StepField)> = FIELDS
            .into_iter()
            .filter(|&(f, _)| self.output.wants(f))
            .collect();
        let header = StepHeader {
            step: index,
            load_factor,
            next_increment,
            time,
            fields: wanted.iter().map(|&(_, s)| s).collect(),
        };
        let dataset = |field: OutputField| wanted.iter().position(|&(f, _)| f == field);
        results.write_step_in_pieces(&header, |pieces| {
            std::thread::scope(|scope| {
                let (ready, arrivals) = mpsc::channel::<OutputField>();
                let (this, derived) = (&self, &derived);
                // the sender moves to the deriving thread: the arrivals end when it ends
                let deriving = std::thread::Builder::new()
                    .name("hexfem-output-fields".into())
                    .spawn_scoped(scope, move || {
                        this.derive(derived, &mut |field| {
                            let _ = ready.send(field);
                        })
                    })
                    .map_err(|error| WriterFailure::Thread { error })?;
                // the fields the state holds, while the others are derived (a field neither
                // holds nor derives leaves its dataset incomplete: the step's error)
                for (i, &(field, _)) in wanted.iter().enumerate() {
                    if let Some(values) = self.held(field) {
                        pieces.put_f64(i, 0, values);
                    }
                }
                // each derived field once it is ready (the channel ends with the deriving)
                for field in arrivals {
                    if let (Some(i), Some(values)) = (dataset(field), derived.values(field)) {
                        pieces.put_f64(i, 0, values);
                    }
                }
                match deriving.join() {
                    Ok(derivation) => derivation,
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            })
        })
    }

    /// The values of `field` that the state holds as it was handed over (`None`: derived here).
    fn held(&self, field: OutputField) -> Option<&[f64]> {
        let cells = &self.state.cells;
        let cell_fields = !cells.fields_later;
        match field {
            OutputField::Displacement => Some(self.state.displacement.as_flattened()),
            OutputField::Reaction => Some(self.state.reaction.as_flattened()),
            OutputField::CauchyStress if cell_fields => Some(cells.cauchy.as_flattened()),
            OutputField::VonMises if cell_fields => Some(&cells.von_mises),
            OutputField::Jacobian if cell_fields => Some(&cells.jacobian),
            OutputField::EnergyDensity if cell_fields => Some(&cells.energy_density),
            f if STRAINS.contains(&f) => cells
                .strains
                .iter()
                .find(|(g, _)| *g == f)
                .map(|(_, v)| v.as_flattened()),
            _ => None,
        }
    }

    /// The element loop's cell fields of the state: the state's own, or those derived.
    fn cells<'a>(&'a self, derived: &'a Derived) -> &'a CellOutputs {
        derived.cells.get().unwrap_or(&self.state.cells)
    }

    /// Derives every field the state lacks that is written (and a first state's strain
    /// energy), calling `ready` with each written field once its values are set, in the
    /// order: cell fields, nodal Cauchy stress and von Mises stress, strains, principal
    /// stresses.
    fn derive(&self, derived: &Derived, ready: &mut dyn FnMut(OutputField)) -> Result<()> {
        let wants = |f| self.output.wants(f);
        let u = &self.state.displacement;
        if self.state.cells.fields_later {
            let Some(strain_cells) = &self.strain_cells else {
                fail!(
                    "a state's cell fields were left to an output writer that cannot compute them"
                );
            };
            // the state's cells hold no values yet: the clone is of the list `later`
            let mut cells = self.state.cells.clone();
            cells.add_later_fields(strain_cells, u)?;
            if let Some(energy) = &self.energy_later {
                let _ = energy.set(cells.total_strain_energy());
            }
            let _ = derived.cells.set(cells);
            for f in [
                OutputField::CauchyStress,
                OutputField::VonMises,
                OutputField::Jacobian,
                OutputField::EnergyDensity,
            ] {
                if wants(f) {
                    ready(f);
                }
            }
        }
        let cauchy = &self.cells(derived).cauchy;
        let nodal_fields = [
            OutputField::NodalCauchyStress,
            OutputField::NodalVonMises,
            OutputField::NodalPrincipalStress,
        ];
        if nodal_fields.into_iter().any(wants) {
            let nodal = self
                .node_cells
                .get_or_init(|| NodeCells::of(&self.mesh))
                .average(cauchy)?;
            let _ = derived.nodal.set(nodal);
            if wants(OutputField::NodalCauchyStress) {
                ready(OutputField::NodalCauchyStress);
            }
        }
        let nodal = derived.nodal.get().map_or(&[][..], Vec::as_slice);
        if wants(OutputField::NodalVonMises) {
            let _ = derived
                .nodal_von_mises
                .set(nodal.par_iter().map(von_mises_of).collect());
            ready(OutputField::NodalVonMises);
        }
        for field in self.cells(derived).later.iter().copied() {
            let Some(k) = STRAINS.iter().position(|&f| f == field) else {
                continue;
            };
            let Some(strain_cells) = &self.strain_cells else {
                fail!("a state's strains were left to an output writer that cannot compute them");
            };
            let _ = derived.strains[k].set(strain_cells.strains(u, field)?);
            if wants(field) {
                ready(field);
            }
        }
        if wants(OutputField::PrincipalStress) {
            let _ = derived.principal.set(crate::fields::principal(cauchy));
            ready(OutputField::PrincipalStress);
        }
        if wants(OutputField::NodalPrincipalStress) {
            let _ = derived.nodal_principal.set(crate::fields::principal(nodal));
            ready(OutputField::NodalPrincipalStress);
        }
        Ok(())
    }

    /// Writes the step whole ([`ResultsWriter::write_step`]) once every field is derived.
    fn write_whole(&self, derived: &Derived, results: &mut ResultsWriter) -> Result<()> {
        let StepStamp {
            index,
            load_factor,
            next_increment,
            time,
        } = self.state.stamp;
        let value = |f| {
            self.output
                .wants(f)
                .then(|| self.held(f).or_else(|| derived.values(f)))
                .flatten()
        };
        let chunks = |f| value(f).map(|v: &[f64]| v.as_chunks::<3>().0);
        let tensors = |f| value(f).map(|v: &[f64]| v.as_chunks::<9>().0);
        let cells = self.cells(derived);
        let wants = |f| self.output.wants(f);
        results.write_step(&StepData {
            step: index,
            load_factor,
            displacement: chunks(OutputField::Displacement),
            reaction: chunks(OutputField::Reaction),
            cauchy_stress: wants(OutputField::CauchyStress)
                .then_some(CellTensor::Full(&cells.cauchy)),
            von_mises: value(OutputField::VonMises),
            jacobian: value(OutputField::Jacobian),
            energy_density: value(OutputField::EnergyDensity),
            nodal_cauchy_stress: tensors(OutputField::NodalCauchyStress),
            nodal_von_mises: value(OutputField::NodalVonMises),
            strain: tensors(OutputField::Strain),
            green_lagrange_strain: tensors(OutputField::GreenLagrangeStrain),
            logarithmic_strain: tensors(OutputField::LogarithmicStrain),
            principal_stress: chunks(OutputField::PrincipalStress),
            nodal_principal_stress: chunks(OutputField::NodalPrincipalStress),
            next_increment,
            time,
        })?;
        Ok(())
    }
}

impl Derived {
    /// The values of the derived `field`, once set.
    fn values(&self, field: OutputField) -> Option<&[f64]> {
        let cells = self.cells.get();
        match field {
            OutputField::CauchyStress => cells.map(|c| c.cauchy.as_flattened()),
            OutputField::VonMises => cells.map(|c| c.von_mises.as_slice()),
            OutputField::Jacobian => cells.map(|c| c.jacobian.as_slice()),
            OutputField::EnergyDensity => cells.map(|c| c.energy_density.as_slice()),
            OutputField::NodalCauchyStress => self.nodal.get().map(|v| v.as_flattened()),
            OutputField::NodalVonMises => self.nodal_von_mises.get().map(Vec::as_slice),
            OutputField::PrincipalStress => self.principal.get().map(|v| v.as_flattened()),
            OutputField::NodalPrincipalStress => {
                self.nodal_principal.get().map(|v| v.as_flattened())
            }
            f => {
                let k = STRAINS.iter().position(|&g| g == f)?;
                self.strains[k].get().map(|v| v.as_flattened())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::timings::displacement;
    use super::*;
    use crate::run::{create_results, nodal_average, CellOutputs, StateSnapshot, StepStamp};
    use config::Config;
    use linalg::Vector;
    use solve::problem::Problem;

    /// Every output field, of a neo-Hookean Q1 block, with `extra` output keys.
    fn block(extra: &str) -> (Config, Problem) {
        let text = format!(
            "mesh:\n  box: {{ cells: [4, 3, 2], lower: [0, 0, 0], upper: [2, 1, 1] }}\n\
            materials:\n  - {{ model: neo_hookean, young_modulus: 10.0, poisson_ratio: 0.3 }}\n\
            boundary:\n  dirichlet:\n    - {{ set: zmin, x: 0.0, y: 0.0, z: 0.0 }}\n\
            output: {{ fields: [displacement, reaction, cauchy_stress, von_mises, jacobian, \
            energy_density, nodal_cauchy_stress, nodal_von_mises, strain, green_lagrange_strain, \
            logarithmic_strain, principal_stress, nodal_principal_stress]{extra} }}\n"
        );
        let config = config::load_str(&text, std::path::Path::new("block.yaml"), &[]).unwrap();
        let problem = crate::locate::build_problem(&config).unwrap();
        (config, problem)
    }

    fn stamp(index: usize) -> StepStamp {
        StepStamp {
            index,
            load_factor: 0.25 * index as f64,
            next_increment: Some(0.25),
            time: Some(0.25 * index as f64),
        }
    }

    fn nodal(v: &Vector) -> Vec<[f64; 3]> {
        v.host().unwrap().as_chunks::<3>().0.to_vec()
    }

    /// The step `index` at `u`, every field computed first and written whole (the writer
    /// before the pipeline).
    fn write_whole(
        config: &Config,
        problem: &Problem,
        u: &Vector,
        index: usize,
        results: &mut ResultsWriter,
    ) {
        let cells = CellOutputs::compute(problem, u, config, false).unwrap();
        let nodal_stress = nodal_average(&problem.mesh, &cells.cauchy);
        let nodal_vm: Vec<f64> = nodal_stress.iter().map(von_mises_of).collect();
        let principal = crate::fields::principal(&cells.cauchy);
        let nodal_principal = crate::fields::principal(&nodal_stress);
        let strain = |f| {
            cells
                .strains
                .iter()
                .find(|(g, _)| *g == f)
                .map(|(_, v)| v.as_slice())
        };
        let displacement = nodal(u);
        let reaction = nodal(&displacement_reaction(problem));
        let stamp = stamp(index);
        results
            .write_step(&StepData {
                step: index,
                load_factor: stamp.load_factor,
                displacement: Some(&displacement),
                reaction: Some(&reaction),
                cauchy_stress: Some(CellTensor::Full(&cells.cauchy)),
                von_mises: Some(&cells.von_mises),
                jacobian: Some(&cells.jacobian),
                energy_density: Some(&cells.energy_density),
                nodal_cauchy_stress: Some(&nodal_stress),
                nodal_von_mises: Some(&nodal_vm),
                strain: strain(OutputField::Strain),
                green_lagrange_strain: strain(OutputField::GreenLagrangeStrain),
                logarithmic_strain: strain(OutputField::LogarithmicStrain),
                principal_stress: Some(&principal),
                nodal_principal_stress: Some(&nodal_principal),
                next_increment: stamp.next_increment,
                time: stamp.time,
            })
            .unwrap();
    }

    /// A stand-in for the reactions (any nodal vector).
    fn displacement_reaction(problem: &Problem) -> Vector {
        displacement(problem, -7.0)
    }

    /// The pipeline's state `index` at `u`: a first state whose cell fields the writer
    /// computes, or a state whose strains it computes.
    fn write_pipelined(
        config: &Config,
        problem: &Problem,
        u: &Vector,
        index: usize,
        results: &mut ResultsWriter,
    ) -> (Result<()>, Option<f64>) {
        let mesh = Arc::new(problem.mesh.clone());
        let strain_cells = StrainCells::of(problem, Arc::clone(&mesh)).map(Arc::new);
        let (cells, energy_later) = if index == 0 {
            let cells = CellOutputs::fields_later(config);
            (cells, Some(Arc::new(OnceLock::new())))
        } else {
            (
                CellOutputs::compute(problem, u, config, true).unwrap(),
                None,
            )
        };
        assert_eq!(cells.later.len(), 3, "every strain is left to the writer");
        let job = StateWrite {
            output: config.output.clone(),
            mesh,
            node_cells: Arc::new(OnceLock::new()),
            strain_cells,
            energy_later: energy_later.clone(),
            state: StateSnapshot::of(stamp(index), u, &displacement_reaction(problem), cells)
                .unwrap(),
        };
        let outcome = job.write(results);
        (outcome, energy_later.and_then(|e| e.get().copied()))
    }

    /// The pipeline (fields written while others are derived, in another order) writes the
    /// file that every field computed first and written whole gives, byte for byte: a first
    /// state whose cell fields the writer computes, then states whose strains it computes; in
    /// double and single precision, and with `.vtu` output (where it writes whole fields). A
    /// first state's strain energy is the element loop's.
    #[test]
    fn the_pipelined_step_is_the_whole_fields_step_byte_for_byte() {
        for extra in ["", ", precision: single", ", vtu: true"] {
            let (config, problem) = block(extra);
            let dir = std::env::temp_dir().join(format!(
                "sim-state-write-{}-{}",
                extra.len(),
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            let (whole, piped) = (dir.join("whole"), dir.join("piped"));
            std::fs::create_dir_all(&whole).unwrap();
            std::fs::create_dir_all(&piped).unwrap();
            let faults = io::Faults::none();
            let mut a = create_results(&config, &problem.mesh, &whole, "x", &faults).unwrap();
            let mut b = create_results(&config, &problem.mesh, &piped, "x", &faults).unwrap();
            for (index, scale) in [(0, 0.0), (1, 0.5), (2, 1.0)] {
                let u = displacement(&problem, scale);
                write_whole(&config, &problem, &u, index, &mut a);
                let (outcome, energy) = write_pipelined(&config, &problem, &u, index, &mut b);
                outcome.unwrap();
                if index == 0 {
                    let cells = CellOutputs::compute(&problem, &u, &config, false).unwrap();
                    assert_eq!(energy, Some(cells.total_strain_energy()));
                }
            }
            let bytes = |d: &std::path::Path| std::fs::read(d.join("x.h5")).unwrap();
            assert!(
                bytes(&whole) == bytes(&piped),
                "{extra}: the HDF5 files differ"
            );
            let xdmf = |d: &std::path::Path| std::fs::read(d.join("x.xdmf")).unwrap();
            assert_eq!(xdmf(&whole), xdmf(&piped), "{extra}");
            assert_eq!(b.steps_written(), 3);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// A first state with inverted cells: the pipeline's error is the element loop's (its first
    /// failing cell's), and the file keeps the steps committed before it.
    #[test]
    fn a_failing_cell_is_the_element_loops_error_and_the_file_keeps_its_steps() {
        let (config, problem) = block("");
        let dir = std::env::temp_dir().join(format!("sim-state-fail-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut results =
            create_results(&config, &problem.mesh, &dir, "x", &io::Faults::none()).unwrap();
        // the nodes at x = 2 pushed back past x = 0: the last column of cells inverts
        let u: Vec<f64> = problem
            .mesh
            .coords
            .iter()
            .flat_map(|x| [if x[0] > 1.9 { -2.5 } else { 0.0 }, 0.0, 0.0])
            .collect();
        let u = Vector::from_vec(u);
        let (outcome, _) = write_pipelined(&config, &problem, &u, 0, &mut results);
        let host = CellOutputs::compute(&problem, &u, &config, false).unwrap_err();
        assert_eq!(format!("{:#}", outcome.unwrap_err()), format!("{host:#}"));
        assert_eq!(results.steps_written(), 0);
        let file = io::ResultsReader::open(results.h5_path()).unwrap();
        assert!(file.steps().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
