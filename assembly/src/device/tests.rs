//! The element loop on the GPU against the host: element residuals, tangent blocks, energies and
//! output fields per material and order, and on a mesh of all five materials (1e-13 relative and
//! the tangent's bits), a finite-difference check of the device tangent against the device
//! residual, and the assembled residual and tangent through the COO plans (the tangent's made on
//! the GPU, the residual's uploaded). In the crate
//! (not under `tests/`): the pieces below [`DeviceProblem`] that they check are crate-private.
//!
//! GPU tests print one `SKIP` line and pass where there is no CUDA device (CI); they run on the
//! device machine (scripts/device.sh stages the crate's test binary; its tests `device::`).

use std::sync::Arc;

use super::{
    body_force_at_points, compile_constraints_source, compile_element_source, compile_loads_source,
    compile_rigid_body_source, deformed_rigid_body_modes, DeviceAssembler, DeviceConstraints,
    DeviceElements, DeviceProblem, DeviceTractions, CELL_FIELDS,
};
use crate::{
    CellMaterials, Constraints, CurvedLoad, DiscreteProblem, ElasticityAssembler, FollowerPressure,
    NewtonProblem, PositionFn, Prescribed,
};
use fem::{
    CellFieldSet, CellKind, ElementKernel, Formulation, Load, Material, Moduli, StateCellFields,
    StrainMeasure,
};
use linalg::gpu::{unavailable_reason, CudaContext, DeviceBuffer};
use linalg::{Bsr, Vector};
use mesh::{generate_box, BoxSpec};

fn context() -> Option<Arc<CudaContext>> {
    if let Some(reason) = unavailable_reason() {
        println!("SKIP: no CUDA device ({reason})");
        return None;
    }
    match CudaContext::new(0) {
        Ok(c) => Some(c),
        Err(e) => {
            println!("SKIP: no CUDA device ({e})");
            None
        }
    }
}

fn materials() -> Vec<Material> {
    let m = Moduli::from_young_poisson(2.0, 0.3).unwrap();
    vec![
        Material::linear(m),
        Material::saint_venant_kirchhoff(m),
        Material::neo_hookean(m),
        Material::decoupled_neo_hookean(m),
        Material::mooney_rivlin(m, 0.3).unwrap(),
    ]
}

/// A skewed box of `n^3` cells with a smooth, moderate displacement (deterministic).
fn problem(order: usize, n: usize, material: Material) -> (ElasticityAssembler, Vec<f64>) {
    let mesh = skewed_box(order, n);
    let assembler = ElasticityAssembler::new(
        &mesh,
        CellMaterials::uniform(material, mesh.n_cells()),
        order + 1,
    )
    .unwrap();
    let u = mesh
        .coords
        .iter()
        .flat_map(|x| {
            [
                0.08 * (x[1] * 2.0).sin() + 0.03 * x[0] * x[2],
                -0.05 * (x[0] + 0.5 * x[2]).cos() + 0.05,
                0.06 * x[0] * x[1] - 0.04 * x[2] * x[2],
            ]
        })
        .collect();
    (assembler, u)
}

/// The skewed box of `n^3` cells of order `order` the device tests run on.
fn skewed_box(order: usize, n: usize) -> mesh::HexMesh {
    let kind = CellKind::from_order(order).unwrap();
    let corners = [
        [0.0, 0.0, 0.0],
        [1.1, 0.1, 0.0],
        [0.05, 0.9, 0.1],
        [1.2, 1.0, 0.05],
        [0.1, 0.0, 1.0],
        [1.0, 0.1, 1.1],
        [0.0, 1.1, 0.9],
        [1.1, 1.05, 1.2],
    ];
    generate_box(&BoxSpec::mapped([n; 3], corners, kind)).unwrap()
}

/// `max |a - b| / max |b|`.
fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

/// Host element contributions in the assembler's layout, each cell with its own material; and each
/// cell's material.
fn host_contributions(
    assembler: &ElasticityAssembler,
    u: &[f64],
) -> (Vec<f64>, Vec<f64>, Vec<Material>) {
    let n = assembler.kernel().n_nodes();
    let per_cell = assembler
        .map_cells(&Vector::from_vec(u.to_vec()), |c, xe, ue, material| {
            let mut re = vec![[0.0; 3]; n];
            let mut ke = vec![[0.0; 9]; n * n];
            assembler.kernel_of(c).residual_tangent(
                xe,
                ue,
                material,
                Load::None,
                &mut re,
                Some(&mut ke),
            )?;
            Ok((re, ke, *material))
        })
        .unwrap();
    let (mut r, mut k, mut m) = (Vec::new(), Vec::new(), Vec::new());
    for (re, ke, material) in per_cell {
        r.extend(re.as_flattened());
        k.extend(ke.as_flattened());
        m.push(material);
    }
    (r, k, m)
}

/// The materials of a mesh of several: all five models, interleaved in cell order (cell `c` takes
/// model `(c + c / 5) % 5`, so each material's cells are scattered through the mesh).
fn mixed_materials(n_cells: usize) -> CellMaterials {
    let of_cell = (0..n_cells).map(|c| ((c + c / 5) % 5) as u16).collect();
    CellMaterials::new(materials(), of_cell).unwrap()
}

/// [`problem`] with [`mixed_materials`].
fn mixed_problem(order: usize, n: usize) -> (ElasticityAssembler, Vec<f64>) {
    let (mut assembler, u) = problem(order, n, materials()[0]);
    assembler
        .set_materials(mixed_materials(assembler.n_cells()))
        .unwrap();
    (assembler, u)
}

/// Device element residuals, tangent blocks, energies and output fields of `assembler` at `u`
/// against the host's, each cell with its own material: 1e-13 relative per output, and the
/// tangent's bits in every cell (decoupled neo-Hookean's `J^{-2/3}` included: both sides compute
/// it with the same operations). Returns the failures (printing every figure first).
fn compare_element_kernels(
    ctx: &Arc<CudaContext>,
    assembler: &ElasticityAssembler,
    u: &[f64],
    label: &str,
) -> Vec<String> {
    let mut failures = Vec::new();
    let mut elements = DeviceElements::new(ctx, assembler).unwrap();
    let ud = ctx.upload(u).unwrap();
    let mut r = ctx.zeros::<f64>(elements.residual_len()).unwrap();
    let mut k = ctx.zeros::<f64>(elements.tangent_len()).unwrap();
    elements.residual_tangent(&ud, &mut r, &mut k).unwrap();
    elements.check_failure(&ud).unwrap();
    let (rh, kh, cell_materials) = host_contributions(assembler, u);
    let (rd, kd) = (ctx.download(&r).unwrap(), ctx.download(&k).unwrap());
    let (er, ek) = (rel_diff(&rd, &rh), rel_diff(&kd, &kh));
    let block = kh.len() / cell_materials.len();
    let mut same = 0;
    for (c, m) in cell_materials.iter().enumerate() {
        let cell = c * block..(c + 1) * block;
        let bits = kd[cell.clone()]
            .iter()
            .zip(&kh[cell])
            .filter(|(a, b)| a.to_bits() == b.to_bits())
            .count();
        same += bits;
        if bits != block {
            failures.push(format!("{label}: cell {c} ({}): tangent bits", m.name()));
        }
    }
    println!(
        "{label}: residual {er:.1e} tangent {ek:.1e} ({same}/{} tangent values bit-identical)",
        kh.len()
    );
    if er > 1e-13 || ek > 1e-13 {
        failures.push(format!("{label}: residual {er:e} tangent {ek:e}"));
    }
    // The residual-only kernel gives the same residual.
    let mut r2 = ctx.zeros::<f64>(elements.residual_len()).unwrap();
    elements.residual(&ud, &mut r2).unwrap();
    elements.check_failure(&ud).unwrap();
    if ctx.download(&r2).unwrap() != rd {
        failures.push(format!(
            "{label}: residual-only kernel != residual of the pair"
        ));
    }
    // Energies.
    let mut e = ctx.zeros::<f64>(elements.n_cells()).unwrap();
    elements.energies(&ud, &mut e).unwrap();
    elements.check_failure(&ud).unwrap();
    let ed = ctx.download(&e).unwrap();
    let uh = Vector::from_vec(u.to_vec());
    let eh = assembler
        .map_cells(&uh, |_, x, ue, m| {
            assembler.kernel().strain_energy(x, ue, m)
        })
        .unwrap();
    let ee = rel_diff(&ed, &eh);
    // Output fields.
    let mut fd = ctx.zeros::<f64>(CELL_FIELDS * elements.n_cells()).unwrap();
    elements.cell_fields(&ud, &mut fd).unwrap();
    elements.check_failure(&ud).unwrap();
    let fd = ctx.download(&fd).unwrap();
    let fh: Vec<f64> = assembler
        .map_cells(&uh, |_, x, ue, m| assembler.kernel().cell_fields(x, ue, m))
        .unwrap()
        .iter()
        .flat_map(|c| {
            let mut v = c.cauchy.to_vec();
            v.extend([c.von_mises, c.j, c.energy_density, c.strain_energy]);
            v
        })
        .collect();
    let fields: Vec<f64> = (0..CELL_FIELDS)
        .map(|f| {
            let d: Vec<f64> = fd.iter().skip(f).step_by(CELL_FIELDS).copied().collect();
            let h: Vec<f64> = fh.iter().skip(f).step_by(CELL_FIELDS).copied().collect();
            rel_diff(&d, &h)
        })
        .collect();
    let fields_bits = fd
        .iter()
        .zip(&fh)
        .filter(|(a, b)| a.to_bits() == b.to_bits())
        .count();
    println!(
        "{label}: energies {ee:.1e}; cell fields {:.1e} ({fields_bits}/{} bit-identical)",
        fields.iter().fold(0.0f64, |m, &e| m.max(e)),
        fh.len()
    );
    if ee > 1e-13 {
        failures.push(format!("{label}: energies {ee:e}"));
    }
    for (f, e) in fields.iter().enumerate() {
        if *e > 1e-13 {
            failures.push(format!("{label}: cell field {f}: {e:e}"));
        }
    }
    failures.extend(state_cell_fields_are_the_cell_fields(
        &mut elements,
        &ud,
        label,
    ));
    failures
}

/// The state's cell fields of either set ([`DeviceElements::download_state_cell_fields`])
/// against [`DeviceElements::download_cell_fields`]: every field as it is, `J` and the strain
/// energy of the checks bit for bit (a finite state: no fallback to every field).
fn state_cell_fields_are_the_cell_fields(
    elements: &mut DeviceElements,
    ud: &DeviceBuffer<f64>,
    label: &str,
) -> Vec<String> {
    let every = elements.download_cell_fields(ud).unwrap();
    let mut failures = Vec::new();
    match elements.download_state_cell_fields(ud, CellFieldSet::Every) {
        Ok(StateCellFields::Every(fields)) if fields == every => {}
        other => failures.push(format!("{label}: every state cell field: {other:?}")),
    }
    let j: Vec<u64> = every.iter().map(|f| f.j.to_bits()).collect();
    let energy: Vec<u64> = every.iter().map(|f| f.strain_energy.to_bits()).collect();
    match elements.download_state_cell_fields(ud, CellFieldSet::Checks) {
        Ok(StateCellFields::Checks {
            j: jd,
            strain_energy: ed,
        }) if jd.iter().map(|v| v.to_bits()).eq(j.iter().copied())
            && ed.iter().map(|v| v.to_bits()).eq(energy.iter().copied()) => {}
        other => failures.push(format!("{label}: the checks' state cell fields: {other:?}")),
    }
    failures
}

#[test]
fn element_source_compiles_for_every_order_and_material() {
    // NVRTC alone (no device needed): every specialisation the device path can ask for.
    for (order, formulation) in [1, 2]
        .into_iter()
        .flat_map(|o| Formulation::ALL.map(|f| (o, f)))
    {
        let kernel = ElementKernel::new(order, order + 1)
            .unwrap()
            .with_formulation(formulation)
            .unwrap();
        for m in materials() {
            match compile_element_source(&kernel, &m, "sm_90") {
                Ok(bytes) => assert!(bytes > 0),
                Err(crate::AssemblyError::Linalg(linalg::LinalgError::CudaUnavailable {
                    reason,
                })) => {
                    println!("SKIP: no NVRTC ({reason})");
                    return;
                }
                Err(e) => panic!("Q{order} {} {}: {e}", formulation.name(), m.name()),
            }
        }
    }
    assert!(compile_constraints_source("sm_90").unwrap() > 0);
    assert!(compile_rigid_body_source("sm_90").unwrap() > 0);
    for order in [1, 2] {
        assert!(compile_loads_source(order, "sm_90").unwrap() > 0);
    }
}

#[test]
fn device_element_kernels_match_the_host_per_material() {
    let Some(ctx) = context() else { return };
    let mut failures = Vec::new();
    for order in [1, 2] {
        let n = if order == 1 { 3 } else { 2 };
        for material in materials() {
            let (assembler, u) = problem(order, n, material);
            let label = format!("Q{order} {:<24}", material.name());
            failures.extend(compare_element_kernels(&ctx, &assembler, &u, &label));
        }
    }
    assert!(failures.is_empty(), "device != host: {failures:#?}");
}

/// Volume changes of 10 % and more take `ln(1 + x)` through `ln` itself, not its series: the
/// device's `ln_portable` (and `exp_portable`) give the host's bits there too (CUDA's `log`
/// rounded some arguments differently, which left a few tangent entries of the slender beam's
/// GPU run one ulp off the CPU's).
#[test]
fn device_element_kernels_match_the_host_at_large_volume_changes() {
    let Some(ctx) = context() else { return };
    let mut failures = Vec::new();
    for order in [1, 2] {
        for stretch in [-0.2, 0.25] {
            for material in materials() {
                let (assembler, smooth) = problem(order, 2, material);
                let coords = skewed_box(order, 2).coords;
                let u: Vec<f64> = coords
                    .iter()
                    .zip(smooth.chunks(3))
                    .flat_map(|(x, s)| std::array::from_fn::<f64, 3, _>(|i| stretch * x[i] + s[i]))
                    .collect();
                let label = format!("Q{order} stretch {stretch:+} {:<24}", material.name());
                failures.extend(compare_element_kernels(&ctx, &assembler, &u, &label));
            }
        }
    }
    assert!(failures.is_empty(), "device != host: {failures:#?}");
}

/// A mesh of all five materials, interleaved: one launch per material over its cells writes the
/// same contributions, energies and output fields as the host's loop over the cells.
#[test]
fn device_element_kernels_match_the_host_with_several_materials() {
    let Some(ctx) = context() else { return };
    let mut failures = Vec::new();
    for order in [1, 2] {
        let n = if order == 1 { 3 } else { 2 };
        let (assembler, u) = mixed_problem(order, n);
        let elements = DeviceElements::new(&ctx, &assembler).unwrap();
        let groups = elements.materials();
        assert_eq!(groups.len(), 5, "Q{order}: one launch per material");
        assert_eq!(
            groups.iter().map(|g| g.1).sum::<usize>(),
            assembler.n_cells()
        );
        let label = format!("Q{order} five materials");
        failures.extend(compare_element_kernels(&ctx, &assembler, &u, &label));
    }
    assert!(failures.is_empty(), "device != host: {failures:#?}");
}

/// A state with a field that overflows where `J` does not (a linear model stretched by 1e160
/// along x on an axis-aligned box: `J` 1e160, the von Mises stress and the energy infinite):
/// the checks' set comes down as every field, so that the state's check names the field.
#[test]
fn state_cell_fields_of_a_state_not_finite_are_every_field() {
    let Some(ctx) = context() else { return };
    let kind = CellKind::from_order(1).unwrap();
    let mesh = generate_box(&BoxSpec::new([2; 3], [0.0; 3], [1.0; 3], kind)).unwrap();
    let material = materials()[0];
    let assembler =
        ElasticityAssembler::new(&mesh, CellMaterials::uniform(material, mesh.n_cells()), 2)
            .unwrap();
    let u: Vec<f64> = mesh
        .coords
        .iter()
        .flat_map(|x| [1e160 * x[0], 0.0, 0.0])
        .collect();
    let mut elements = DeviceElements::new(&ctx, &assembler).unwrap();
    let ud = ctx.upload(&u).unwrap();
    match elements
        .download_state_cell_fields(&ud, CellFieldSet::Checks)
        .unwrap()
    {
        StateCellFields::Every(fields) => {
            assert!(fields.iter().all(|f| f.j.is_finite()), "{fields:?}");
            assert!(
                fields.iter().all(|f| f.von_mises.is_infinite()),
                "{fields:?}"
            );
            assert_eq!(fields, elements.download_cell_fields(&ud).unwrap());
        }
        checks => panic!("a state not finite came down as the checks' pair: {checks:?}"),
    }
}

/// The cell strains of the output on the device ([`DeviceElements::download_cell_strains`])
/// against the host's [`ElementKernel::cell_strain`]: the model's strain (small for `linear`,
/// Green-Lagrange for the others) and the Green-Lagrange strain bit for bit, Q1 and Q2, every
/// model alone and the five interleaved (one launch per material); the logarithmic strain and
/// the projected formulation are refused (left to the host).
#[test]
fn device_cell_strains_are_the_hosts_bits() {
    let Some(ctx) = context() else { return };
    let measures = [StrainMeasure::Model, StrainMeasure::GreenLagrange];
    let mut failures = Vec::new();
    for order in [1, 2] {
        let n = if order == 1 { 3 } else { 2 };
        let mut cases: Vec<(String, (ElasticityAssembler, Vec<f64>))> = materials()
            .into_iter()
            .map(|m| (format!("Q{order} {:<24}", m.name()), problem(order, n, m)))
            .collect();
        cases.push((format!("Q{order} five materials"), mixed_problem(order, n)));
        for (label, (assembler, u)) in &cases {
            // a larger strain too, where the Green-Lagrange strain's h^T h counts
            for scale in [1.0, 4.0] {
                let u: Vec<f64> = u.iter().map(|v| scale * v).collect();
                let mut elements = DeviceElements::new(&ctx, assembler).unwrap();
                let ud = ctx.upload(&u).unwrap();
                let uh = Vector::from_vec(u.clone());
                for measure in measures {
                    assert!(elements.computes_strain(measure), "{label}: {measure:?}");
                    let device = elements.download_cell_strains(&ud, measure).unwrap();
                    let host = assembler
                        .map_cells(&uh, |c, x, ue, m| {
                            assembler.kernel_of(c).cell_strain(x, ue, m, measure)
                        })
                        .unwrap();
                    let what = format!("{measure:?} strain, u x {scale}");
                    failures.extend(same_values(
                        label,
                        &what,
                        device.as_flattened(),
                        host.as_flattened(),
                        true,
                        0.0,
                    ));
                }
                assert!(!elements.computes_strain(StrainMeasure::Logarithmic));
                assert!(matches!(
                    elements.download_cell_strains(&ud, StrainMeasure::Logarithmic),
                    Err(crate::AssemblyError::DeviceUnsupported { .. })
                ));
            }
        }
        let (assembler, _) = projected_problem(order, n, materials()[2], 1.0, 0.0);
        let elements = DeviceElements::new(&ctx, &assembler).unwrap();
        assert!(measures.iter().all(|&m| !elements.computes_strain(m)));
    }
    assert!(failures.is_empty(), "device != host: {failures:#?}");
}

/// [`problem`] in the projected formulation with the displacement `scale` times [`problem`]'s plus
/// a pseudo-random perturbation of `noise` per component (deterministic).
fn projected_problem(
    order: usize,
    n: usize,
    material: Material,
    scale: f64,
    noise: f64,
) -> (ElasticityAssembler, Vec<f64>) {
    let (mut assembler, u) = problem(order, n, material);
    assembler.set_formulation(Formulation::Projected).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let u = u
        .iter()
        .map(|v| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            scale * v + noise * unit
        })
        .collect();
    (assembler, u)
}

/// The projected formulation's kernels (fem/cuda/projected.cu) against the host's
/// (fem/src/element/projected.rs), Q1 (mean dilatation) and Q2 (Q2-P1), every model (linear:
/// B-bar): at small strain (1e-3 of [`problem`]'s field, every logarithm and exponential by the
/// shared series) the residual, the tangent and the energies are the host's bits; at large strain
/// ([`problem`]'s field times 3 plus noise: cell averages of `J` 0.78 to 0.96, where `ln` and
/// `exp` come from CUDA's and the C library's) everything within 1e-14 relative (the tangent's bits
/// still asked where the model is linear). The output fields 1e-13, as the displacement
/// formulation's.
#[test]
fn device_projected_kernels_match_the_host() {
    let Some(ctx) = context() else { return };
    let mut failures = Vec::new();
    for order in [1, 2] {
        let n = if order == 1 { 3 } else { 2 };
        for material in materials() {
            for (strain, scale, noise) in [("small", 1e-3, 1e-5), ("large", 3.0, 0.02)] {
                let (assembler, u) = projected_problem(order, n, material, scale, noise);
                let label = format!("Q{order} projected {:<22} {strain}", material.name());
                let bits = strain == "small" || material == materials()[0];
                failures.extend(compare_projected(&ctx, &assembler, &u, &label, bits));
            }
        }
        // several materials: one launch per material (INDIRECT 1); then with the formulations
        // mixed per material (`formulation: auto` on a mesh of rubber and steel): one launch per
        // material and formulation, each from its formulation's source
        let (mut assembler, u) = projected_problem(order, n, materials()[0], 1.0, 0.01);
        let cells = mixed_materials(assembler.n_cells());
        for (what, formulations) in [
            ("projected", vec![Formulation::Projected; 5]),
            (
                "mixed",
                (0..5).map(|i| Formulation::ALL[i % 2]).collect::<Vec<_>>(),
            ),
        ] {
            assembler
                .set_materials(cells.clone().with_formulations(formulations).unwrap())
                .unwrap();
            let label = format!("Q{order} {what} formulations, five materials");
            failures.extend(compare_projected(&ctx, &assembler, &u, &label, false));
        }
    }
    assert!(failures.is_empty(), "device != host: {failures:#?}");
}

/// `a` and `b` bit for bit (`bits`) or within `tol` relative ([`rel_diff`]); prints the figures.
fn same_values(label: &str, what: &str, a: &[f64], b: &[f64], bits: bool, tol: f64) -> Vec<String> {
    let same = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.to_bits() == y.to_bits())
        .count();
    let rel = rel_diff(a, b);
    println!(
        "{label}: {what} {rel:.1e} ({same}/{} bit-identical)",
        b.len()
    );
    if (bits && same != b.len()) || rel.is_nan() || rel > tol {
        vec![format!("{label}: {what}: {rel:e}, {same}/{} bits", b.len())]
    } else {
        Vec::new()
    }
}

/// Device against host for the projected formulation of `assembler` at `u` (some materials may
/// have the displacement formulation): residual (both kernels), tangent and energies bit for bit
/// where `bits`, else to 1e-14; output fields to 1e-13.
fn compare_projected(
    ctx: &Arc<CudaContext>,
    assembler: &ElasticityAssembler,
    u: &[f64],
    label: &str,
    bits: bool,
) -> Vec<String> {
    assert!(assembler
        .materials()
        .formulations()
        .contains(&Formulation::Projected));
    let mut elements = DeviceElements::new(ctx, assembler).unwrap();
    let ud = ctx.upload(u).unwrap();
    let mut r = ctx.zeros::<f64>(elements.residual_len()).unwrap();
    let mut k = ctx.zeros::<f64>(elements.tangent_len()).unwrap();
    elements.residual_tangent(&ud, &mut r, &mut k).unwrap();
    elements.check_failure(&ud).unwrap();
    let (rh, kh, _) = host_contributions(assembler, u);
    let (rd, kd) = (ctx.download(&r).unwrap(), ctx.download(&k).unwrap());
    let mut failures = same_values(label, "residual", &rd, &rh, bits, 1e-14);
    failures.extend(same_values(label, "tangent", &kd, &kh, bits, 1e-14));
    let mut r2 = ctx.zeros::<f64>(elements.residual_len()).unwrap();
    elements.residual(&ud, &mut r2).unwrap();
    elements.check_failure(&ud).unwrap();
    if ctx.download(&r2).unwrap() != rd {
        failures.push(format!(
            "{label}: residual-only kernel != residual of the pair"
        ));
    }
    let mut e = ctx.zeros::<f64>(elements.n_cells()).unwrap();
    elements.energies(&ud, &mut e).unwrap();
    elements.check_failure(&ud).unwrap();
    let uh = Vector::from_vec(u.to_vec());
    let eh = assembler
        .map_cells(&uh, |c, x, ue, m| {
            assembler.kernel_of(c).strain_energy(x, ue, m)
        })
        .unwrap();
    failures.extend(same_values(
        label,
        "energies",
        &ctx.download(&e).unwrap(),
        &eh,
        bits,
        1e-14,
    ));
    let fd = elements.download_cell_fields(&ud).unwrap();
    let fh = assembler
        .map_cells(&uh, |c, x, ue, m| {
            assembler.kernel_of(c).cell_fields(x, ue, m)
        })
        .unwrap();
    let flat = |f: &[fem::CellFields]| -> Vec<f64> {
        f.iter()
            .flat_map(|c| {
                let mut v = c.cauchy.to_vec();
                v.extend([c.von_mises, c.j, c.energy_density, c.strain_energy]);
                v
            })
            .collect()
    };
    failures.extend(same_values(
        label,
        "cell fields",
        &flat(&fd),
        &flat(&fh),
        false,
        1e-13,
    ));
    failures.extend(state_cell_fields_are_the_cell_fields(
        &mut elements,
        &ud,
        label,
    ));
    failures
}

/// The projected tangent on the device against central differences of the device residual (one
/// cell, every model, Q1 and Q2, moderate strain).
#[test]
fn device_projected_tangent_matches_finite_differences_of_the_device_residual() {
    let Some(ctx) = context() else { return };
    for order in [1, 2] {
        for material in materials() {
            let (assembler, u) = projected_problem(order, 1, material, 1.0, 0.01);
            let mut elements = DeviceElements::new(&ctx, &assembler).unwrap();
            let ud = ctx.upload(&u).unwrap();
            let mut r = ctx.zeros::<f64>(elements.residual_len()).unwrap();
            let mut k = ctx.zeros::<f64>(elements.tangent_len()).unwrap();
            elements.residual_tangent(&ud, &mut r, &mut k).unwrap();
            let kd = ctx.download(&k).unwrap();
            let n = elements.nodes_per_cell();
            let scale = kd.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let h = 1e-6;
            let mut worst = 0.0f64;
            for (b, j) in [(0, 0), (n / 2, 1), (n - 1, 2)] {
                let mut column = [Vec::new(), Vec::new()];
                for (side, sign) in [(0, 1.0), (1, -1.0)] {
                    let mut v = u.clone();
                    v[3 * b + j] += sign * h;
                    let vd = ctx.upload(&v).unwrap();
                    elements.residual(&vd, &mut r).unwrap();
                    elements.check_failure(&vd).unwrap();
                    column[side] = ctx.download(&r).unwrap();
                }
                for a in 0..n {
                    for i in 0..3 {
                        let fd = (column[0][3 * a + i] - column[1][3 * a + i]) / (2.0 * h);
                        let an = kd[(a * n + b) * 9 + 3 * i + j];
                        worst = worst.max((fd - an).abs() / scale);
                    }
                }
            }
            println!("Q{order} projected {}: FD {worst:.1e}", material.name());
            assert!(
                worst < 1e-6,
                "Q{order} projected {}: FD {worst:e}",
                material.name()
            );
        }
    }
}

#[test]
fn device_tangent_matches_finite_differences_of_the_device_residual() {
    let Some(ctx) = context() else { return };
    for order in [1, 2] {
        for material in materials() {
            let (assembler, u) = problem(order, 1, material);
            let mut elements = DeviceElements::new(&ctx, &assembler).unwrap();
            let nd = u.len();
            let ud = ctx.upload(&u).unwrap();
            let mut r = ctx.zeros::<f64>(elements.residual_len()).unwrap();
            let mut k = ctx.zeros::<f64>(elements.tangent_len()).unwrap();
            elements.residual_tangent(&ud, &mut r, &mut k).unwrap();
            let kd = ctx.download(&k).unwrap();
            // One cell: its nodes are 0..n in local order, dof 3 b + j.
            let n = elements.nodes_per_cell();
            let h = 1e-6;
            let mut worst = 0.0f64;
            let scale = kd.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let residual_at =
                |elements: &mut DeviceElements, v: &[f64], out: &mut DeviceBuffer<f64>| {
                    let vd = ctx.upload(v).unwrap();
                    elements.residual(&vd, out).unwrap();
                    elements.check_failure(&vd).unwrap();
                    ctx.download(out).unwrap()
                };
            let mut rp = ctx.zeros::<f64>(elements.residual_len()).unwrap();
            for col in 0..nd {
                let (b, j) = (col / 3, col % 3);
                let mut v = u.clone();
                v[col] += h;
                let plus = residual_at(&mut elements, &v, &mut rp);
                v[col] -= 2.0 * h;
                let minus = residual_at(&mut elements, &v, &mut rp);
                for a in 0..n {
                    for i in 0..3 {
                        let fd = (plus[3 * a + i] - minus[3 * a + i]) / (2.0 * h);
                        let an = kd[(a * n + b) * 9 + 3 * i + j];
                        worst = worst.max((fd - an).abs() / scale);
                    }
                }
            }
            println!(
                "Q{order} {:<24} device FD tangent error {worst:.1e}",
                material.name()
            );
            assert!(worst < 1e-7, "Q{order} {}: {worst:e}", material.name());
        }
    }
}

#[test]
fn device_assembly_matches_the_host_assembly() {
    let Some(ctx) = context() else { return };
    for order in [1, 2] {
        let n = if order == 1 { 4 } else { 2 };
        let cases = [
            (materials()[2].name(), problem(order, n, materials()[2])),
            (materials()[4].name(), problem(order, n, materials()[4])),
            ("five materials", mixed_problem(order, n)),
        ];
        for (name, (mut assembler, u)) in cases {
            let mut dev = DeviceAssembler::new(&ctx, &assembler).unwrap();
            // the tangent's plan was made on the GPU: none on the host, whose pattern is the
            // GPU's, which the host plan made next accepts (the same pattern)
            assert!(!assembler.host_matrix_plan_made(), "{name}");
            assert_eq!(**assembler.pattern(), **assembler.matrix_plan().pattern());
            let uh = Vector::from_vec(u.clone());
            let mut rh = Vector::zeros(u.len());
            let mut kh: Bsr = assembler.new_matrix();
            assembler
                .residual_tangent(&uh, Load::None, &mut rh, &mut kh)
                .unwrap();
            let ud = ctx.upload(&u).unwrap();
            let mut rd = ctx.zeros::<f64>(u.len()).unwrap();
            let mut kd = dev.new_matrix().unwrap();
            dev.residual_tangent(&ud, &mut rd, &mut kd).unwrap();
            let rdv = ctx.download(&rd).unwrap();
            let kdv = ctx.download(kd.values()).unwrap();
            let (er, ek) = (
                rel_diff(&rdv, rh.host().unwrap()),
                rel_diff(&kdv, kh.host().unwrap()),
            );
            let same = kdv
                .iter()
                .zip(kh.host().unwrap())
                .filter(|(a, b)| a == b)
                .count();
            println!(
                "Q{order} {name:<24} assembled residual {er:.1e} tangent {ek:.1e} ({same}/{} bit-identical)",
                kdv.len()
            );
            assert!(er <= 1e-13 && ek <= 1e-13);
            // Residual alone equals the residual of the pair.
            let mut r2 = ctx.zeros::<f64>(u.len()).unwrap();
            dev.residual(&ud, &mut r2).unwrap();
            assert_eq!(ctx.download(&r2).unwrap(), rdv);
        }
    }
}

/// The device problem's element loop alone ([`DeviceProblem::internal_residual_tangent`], its
/// timed twin and [`DeviceProblem::internal_residual`], what `hexfem bench assembly --device
/// cuda` times): the host assembler's residual and tangent without a load to 1e-13 relative (as
/// the device assembler's above), the timed call the untimed call's bits with its phases timed,
/// the residual alone the pair's residual; five materials interleaved, Q1 and Q2.
#[test]
fn device_problem_internal_forces_match_the_host_assembly() {
    let Some(ctx) = context() else { return };
    for order in [1, 2] {
        let n = if order == 1 { 4 } else { 2 };
        let (mut assembler, u) = mixed_problem(order, n);
        let uh = Vector::from_vec(u.clone());
        let mut rh = Vector::zeros(u.len());
        let mut kh: Bsr = assembler.new_matrix();
        assembler
            .residual_tangent(&uh, Load::None, &mut rh, &mut kh)
            .unwrap();
        let constraints = twisted_box_constraints(assembler.coords());
        let host = DiscreteProblem {
            assembler,
            constraints,
            external: Vector::zeros(u.len()),
            follower: Vec::new(),
            curved: Vec::new(),
            partition: None,
        };
        let mut device = DeviceProblem::new(&ctx, &host).unwrap();
        let ud = uh.to_device(device.device()).unwrap();
        let mut system = device.new_system().unwrap();
        device
            .internal_residual_tangent(&ud, &mut system.residual, &mut system.tangent)
            .unwrap();
        let rd = system.residual.to_host_vec().unwrap();
        let kd = system.tangent.to_host_vec().unwrap();
        let (er, ek) = (
            rel_diff(&rd, rh.host().unwrap()),
            rel_diff(&kd, kh.host().unwrap()),
        );
        println!("Q{order} device problem: internal forces {er:.1e}, tangent {ek:.1e}");
        assert!(er <= 1e-13 && ek <= 1e-13, "Q{order}: {er:e} {ek:e}");
        let times = device
            .timed_internal_residual_tangent(&ud, &mut system.residual, &mut system.tangent)
            .unwrap();
        println!("Q{order} device problem: {times:?}");
        assert!(times.elements_ms > 0.0 && times.sums_ms > 0.0, "{times:?}");
        assert_eq!(system.residual.to_host_vec().unwrap(), rd, "Q{order}");
        assert_eq!(system.tangent.to_host_vec().unwrap(), kd, "Q{order}");
        let mut r = device.zeros().unwrap();
        device.internal_residual(&ud, &mut r).unwrap();
        assert_eq!(r.to_host_vec().unwrap(), rd, "Q{order}: residual alone");
        assert!(device.assembly_bytes() > 0 && device.eliminated_blocks() > 0);
    }
}

#[test]
fn device_reports_the_first_inverted_cell_like_the_host() {
    let Some(ctx) = context() else { return };
    let material = materials()[2];
    let (mut assembler, mut u) = problem(1, 2, material);
    // Crush node 13's neighbourhood: pull one interior node far through its neighbours.
    let centre = 13;
    u[3 * centre] += 5.0;
    let uh = Vector::from_vec(u.clone());
    let mut rh = Vector::zeros(u.len());
    let host = assembler.residual(&uh, Load::None, &mut rh).unwrap_err();
    let mut dev = DeviceAssembler::new(&ctx, &assembler).unwrap();
    let ud = ctx.upload(&u).unwrap();
    let mut rd = ctx.zeros::<f64>(u.len()).unwrap();
    let device = dev.residual(&ud, &mut rd).unwrap_err();
    assert_eq!(device.cell(), host.cell());
    assert_eq!(device.to_string(), host.to_string());
}

#[test]
fn device_constraints_are_bit_identical_to_the_host() {
    let Some(ctx) = context() else { return };
    let material = materials()[2];
    let (mut assembler, u) = problem(1, 4, material);
    let coords = assembler.coords().to_vec();
    let constraints = twisted_box_constraints(&coords);
    let dc = DeviceConstraints::new(&ctx, &constraints, assembler.pattern(), &coords).unwrap();
    // prescribed values at a load factor, over a state
    let mut uh = Vector::from_vec(u.clone());
    constraints.write_prescribed(0.7, &coords, &mut uh).unwrap();
    let mut ud = ctx.upload(&u).unwrap();
    dc.write_prescribed(0.7, &mut ud).unwrap();
    assert_eq!(ctx.download(&ud).unwrap(), uh.host().unwrap());
    // zero and copy
    let mut zh = Vector::from_vec(u.clone());
    constraints.zero_constrained(&mut zh).unwrap();
    let mut zd = ctx.upload(&u).unwrap();
    dc.zero(&mut zd).unwrap();
    assert_eq!(ctx.download(&zd).unwrap(), zh.host().unwrap());
    constraints.copy_constrained(&uh, &mut zh).unwrap();
    dc.copy(&ud, &mut zd).unwrap();
    assert_eq!(ctx.download(&zd).unwrap(), zh.host().unwrap());
    // the constrained entries alone brought into a host vector (a state's reactions)
    let mut reactions = Vector::zeros(u.len());
    constraints.copy_constrained(&uh, &mut reactions).unwrap();
    let mut on_host = vec![0.0; u.len()];
    dc.copy_to_host(&ud, &mut on_host).unwrap();
    assert_eq!(on_host, reactions.host().unwrap());
    // elimination: the host's assembled tangent uploaded, eliminated on both sides (the element
    // values at this twisted state differ from the host's in the last bit here and there, through
    // log; the elimination itself must not differ at all)
    let dev = DeviceAssembler::new(&ctx, &assembler).unwrap();
    let mut rh = Vector::zeros(u.len());
    let mut kh: Bsr = assembler.new_matrix();
    assembler
        .residual_tangent(&uh, Load::None, &mut rh, &mut kh)
        .unwrap();
    let mut kd = dev.new_matrix().unwrap();
    kd.update_values(&ctx, &kh).unwrap();
    constraints.eliminate_in_matrix(&mut kh).unwrap();
    dc.eliminate(&mut kd).unwrap();
    let kdv = ctx.download(kd.values()).unwrap();
    println!(
        "constraints: {} constrained unknowns, {} blocks eliminated",
        constraints.n_constrained(),
        dc.n_touched()
    );
    assert!(constraints.n_constrained() > 0 && dc.n_touched() > 0);
    assert_eq!(kdv, kh.host().unwrap());
}

/// Clamped bottom, twisted and lifted top, one node with one prescribed component.
fn twisted_box_constraints(coords: &[[f64; 3]]) -> Constraints {
    box_constraints(coords, false)
}

/// [`twisted_box_constraints`]; with `timed`, the field set's z value is an expression of the
/// time `t` (the value itself at each time, not scaled by the load factor).
fn box_constraints(coords: &[[f64; 3]], timed: bool) -> Constraints {
    let (zmin, zmax) = coords
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x[2]), b.max(x[2]))
        });
    let on = |z: f64| -> Vec<usize> {
        (0..coords.len())
            .filter(|&i| (coords[i][2] - z).abs() < 0.3)
            .collect()
    };
    // nodes neither set above holds
    let (bottom, top) = (on(zmin), on(zmax));
    let free: Vec<usize> = (0..coords.len())
        .filter(|i| !bottom.contains(i) && !top.contains(i))
        .collect();
    assert!(
        free.len() >= 3,
        "the mesh has nodes between the clamped layers"
    );
    Constraints::new(
        coords.len(),
        vec![
            Prescribed::Components {
                set: "bottom".into(),
                nodes: on(zmin),
                values: [Some(0.0), Some(0.0), Some(0.0)],
            },
            Prescribed::Twist {
                set: "top".into(),
                nodes: on(zmax),
                axis: [0.1, 0.0, 1.0],
                center: [0.5, 0.5, 0.0],
                angle: 0.4,
                axial: 0.05,
            },
            Prescribed::Components {
                set: "one".into(),
                nodes: vec![free[free.len() / 2]],
                values: [None, Some(0.1), None],
            },
            // a value that is a function of the reference position, on two interior nodes
            Prescribed::Field {
                set: "field".into(),
                nodes: vec![free[0], free[free.len() - 1]],
                values: [
                    Some(PositionFn {
                        text: "0.1 x + 0.02 z".into(),
                        uses_time: false,
                        f: Arc::new(|x: [f64; 3], _t: f64| 0.1 * x[0] + 0.02 * x[2]),
                    }),
                    None,
                    Some(if timed {
                        PositionFn {
                            text: "-0.05 y sin(3 t)".into(),
                            uses_time: true,
                            f: Arc::new(|x: [f64; 3], t: f64| -0.05 * x[1] * (3.0 * t).sin()),
                        }
                    } else {
                        PositionFn {
                            text: "-0.05 y".into(),
                            uses_time: false,
                            f: Arc::new(|x: [f64; 3], _t: f64| -0.05 * x[1]),
                        }
                    }),
                ],
            },
        ],
        &[],
    )
    .unwrap()
}

#[test]
fn device_newton_system_matches_the_host() {
    let Some(ctx) = context() else { return };
    let material = materials()[2];
    let (assembler, u) = problem(1, 4, material);
    let coords = assembler.coords().to_vec();
    let constraints = twisted_box_constraints(&coords);
    let external: Vec<f64> = (0..u.len())
        .map(|i| 1e-3 * ((i % 7) as f64 - 3.0))
        .collect();
    let mut host = DiscreteProblem {
        assembler,
        constraints,
        external: Vector::from_vec(external),
        follower: Vec::new(),
        curved: Vec::new(),
        partition: None,
    };
    let mut device = DeviceProblem::new(&ctx, &host).unwrap();
    let uh = Vector::from_vec(u.clone());
    let ud = uh.to_device(device.device()).unwrap();
    let mut hs = host.new_system().unwrap();
    let mut ds = device.new_system().unwrap();
    host.linearize(&uh, 0.6, &mut hs).unwrap();
    device.linearize(&ud, 0.6, &mut ds).unwrap();
    assert_eq!(
        ds.residual.to_host_vec().unwrap(),
        hs.residual.host().unwrap()
    );
    assert_eq!(ds.lift.to_host_vec().unwrap(), hs.lift.host().unwrap());
    assert_eq!(ds.constraints_met().unwrap(), hs.constraints_met().unwrap());
    let hn = host.eliminate(&mut hs).unwrap();
    let dn = device.eliminate(&mut ds).unwrap();
    println!("Newton system: free norm host {hn:e} device {dn:e}");
    assert_eq!(dn, hn);
    assert_eq!(ds.rhs.to_host_vec().unwrap(), hs.rhs.host().unwrap());
    assert_eq!(
        ds.tangent.to_host_vec().unwrap(),
        hs.tangent.host().unwrap()
    );
    let mut scratch = device.zeros().unwrap();
    let mut hscratch = Vector::zeros(u.len());
    assert_eq!(
        device.free_norm(&ds.residual, &mut scratch).unwrap(),
        host.free_norm(&hs.residual, &mut hscratch).unwrap()
    );
}

/// The constraint fixture of the device tests is valid on the host (no conflicting sets), so a
/// device failure is the device's; runs without a GPU.
#[test]
fn twisted_box_fixture_is_consistent() {
    for order in [1, 2] {
        let (assembler, _) = problem(order, 4, materials()[0]);
        let constraints = twisted_box_constraints(assembler.coords());
        assert!(constraints.n_constrained() > 0);
    }
}

/// The device potential energy (exact sums of the cell energies and an exact dot for the dead
/// loads) is the host's bits, for every material and both orders.
#[test]
fn device_potential_is_the_hosts_bits() {
    let Some(ctx) = context() else { return };
    let mut mismatches = Vec::new();
    for order in [1, 2] {
        let mut cases: Vec<(String, _)> = materials()
            .into_iter()
            .map(|m| (format!("{m:?}"), problem(order, 3, m)))
            .collect();
        cases.push(("five materials".into(), mixed_problem(order, 3)));
        for (material, (assembler, u)) in cases {
            let coords = assembler.coords().to_vec();
            let external: Vec<f64> = (0..u.len())
                .map(|i| 1e-3 * ((i % 7) as f64 - 3.0))
                .collect();
            let host = DiscreteProblem {
                assembler,
                constraints: twisted_box_constraints(&coords),
                external: Vector::from_vec(external),
                follower: Vec::new(),
                curved: Vec::new(),
                partition: None,
            };
            let mut device = DeviceProblem::new(&ctx, &host).unwrap();
            let h = host.potential(&Vector::from_vec(u.clone()), 0.6).unwrap();
            let ud = Vector::from_vec(u.clone())
                .to_device(device.device())
                .unwrap();
            let d = device.potential(&ud, 0.6).unwrap();
            println!(
                "potential Q{order} {material}: host {:e} device {:e}",
                h.value, d.value
            );
            if h.value.to_bits() != d.value.to_bits()
                || h.magnitude.to_bits() != d.magnitude.to_bits()
            {
                mismatches.push(format!(
                    "Q{order} {material}: value {:e} vs {:e}, magnitude {:e} vs {:e}",
                    d.value, h.value, d.magnitude, h.magnitude
                ));
            }
        }
    }
    assert!(mismatches.is_empty(), "device != host: {mismatches:#?}");
}

/// What one Newton iteration computes at a state through [`NewtonProblem`] (whichever backend),
/// every vector downloaded: the system after `linearize` and after `eliminate`, a residual, its
/// free norm, the potential, the prescribed values written into the state and the constrained
/// entries of the residual.
#[derive(Debug, PartialEq)]
struct NewtonValues {
    residual: Vec<f64>,
    lift: Vec<f64>,
    tangent: Vec<f64>,
    free_norm: f64,
    eliminated_tangent: Vec<f64>,
    rhs: Vec<f64>,
    residual_alone: Vec<f64>,
    residual_free_norm: f64,
    potential: crate::Potential,
    prescribed: Vec<f64>,
    reactions: Vec<f64>,
}

/// [`NewtonValues`] of `problem` at the host state `u` and `load_factor`: the same calls on
/// either backend (vectors made by the problem, `u` copied up where it lives).
fn newton_values(problem: &mut dyn NewtonProblem, u: &[f64], load_factor: f64) -> NewtonValues {
    let mut state = problem.zeros().unwrap();
    state.copy_from_host(u).unwrap();
    let mut system = problem.new_system().unwrap();
    problem.linearize(&state, load_factor, &mut system).unwrap();
    let (residual, lift, tangent) = (
        system.residual.to_host_vec().unwrap(),
        system.lift.to_host_vec().unwrap(),
        system.tangent.to_host_vec().unwrap(),
    );
    let free_norm = problem.eliminate(&mut system).unwrap();
    let mut r = problem.zeros().unwrap();
    problem.residual(&state, load_factor, &mut r).unwrap();
    let mut scratch = problem.zeros().unwrap();
    let residual_free_norm = problem.free_norm(&r, &mut scratch).unwrap();
    let potential = problem.potential(&state, load_factor).unwrap();
    problem.write_prescribed(load_factor, &mut state).unwrap();
    let mut reactions = problem.zeros().unwrap();
    problem
        .copy_constrained(&system.residual, &mut reactions)
        .unwrap();
    NewtonValues {
        residual,
        lift,
        tangent,
        free_norm,
        eliminated_tangent: system.tangent.to_host_vec().unwrap(),
        rhs: system.rhs.to_host_vec().unwrap(),
        residual_alone: r.to_host_vec().unwrap(),
        residual_free_norm,
        potential,
        prescribed: state.to_host_vec().unwrap(),
        reactions: reactions.to_host_vec().unwrap(),
    }
}

/// Host and device Newton systems, residual, norms, potential and constraint values at `u` and
/// `load_factor` agree to the bit, computed by one caller through [`NewtonProblem`].
fn assert_same_newton_system(
    host: &mut DiscreteProblem,
    device: &mut DeviceProblem,
    u: &[f64],
    load_factor: f64,
    what: &str,
) {
    let h = newton_values(host, u, load_factor);
    let d = newton_values(device, u, load_factor);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for (name, dv, hv) in [
        ("residual", &d.residual, &h.residual),
        ("lifting", &d.lift, &h.lift),
        ("tangent", &d.tangent, &h.tangent),
        (
            "eliminated tangent",
            &d.eliminated_tangent,
            &h.eliminated_tangent,
        ),
        ("right-hand side", &d.rhs, &h.rhs),
        ("residual alone", &d.residual_alone, &h.residual_alone),
        ("prescribed values", &d.prescribed, &h.prescribed),
        ("reactions", &d.reactions, &h.reactions),
    ] {
        assert!(bits(dv) == bits(hv), "{what}: {name}");
    }
    assert_eq!(
        d.free_norm.to_bits(),
        h.free_norm.to_bits(),
        "{what}: free norm"
    );
    assert_eq!(
        d.residual_free_norm.to_bits(),
        h.residual_free_norm.to_bits(),
        "{what}: free norm of the residual"
    );
    assert_eq!(d.potential, h.potential, "{what}: potential");
    println!(
        "{what}: free norm {:e}, potential {:e}: the host's bits",
        h.free_norm, h.potential.value
    );
}

/// Loads on load curves of their own (one on a curve factor, one an expression of `t` whose
/// vector the host recomputes per step), constraints on curves of their own (a twist) and
/// Dirichlet values of `t`: the device's Newton system, residual and potential are the host's
/// bits at two load steps, and the second step's [`DeviceProblem::set_step`] uploads only the
/// timed load's vector and the timed Dirichlet set's values.
#[test]
fn device_curved_loads_and_timed_constraints_are_the_hosts_bits() {
    let Some(ctx) = context() else { return };
    let (assembler, u) = problem(1, 4, materials()[2]);
    let n = u.len();
    let coords = assembler.coords().to_vec();
    let wave = |phase: f64| -> Vector {
        Vector::from_vec(
            (0..n)
                .map(|i| 1e-3 * (i as f64 * 0.37 + phase).sin())
                .collect(),
        )
    };
    let mut constraints = box_constraints(&coords, true);
    assert!(constraints.uses_time());
    constraints.set_time(0.25);
    constraints.set_own_factor(1, Some(0.7));
    let mut host = DiscreteProblem {
        assembler,
        constraints,
        external: wave(0.1),
        follower: Vec::new(),
        curved: vec![
            CurvedLoad {
                vector: wave(1.3),
                factor: 0.3,
                timed: false,
            },
            CurvedLoad {
                vector: wave(2.9),
                factor: 1.0,
                timed: true,
            },
        ],
        partition: None,
    };
    DeviceProblem::supports(&host).unwrap();
    let mut device = DeviceProblem::new(&ctx, &host).unwrap();
    assert_same_newton_system(&mut host, &mut device, &u, 0.6, "step 1");

    // the next load step: new time, new curve factors, a new timed load vector
    host.constraints.set_time(0.75);
    host.constraints.set_own_factor(1, Some(0.2));
    host.constraints.set_own_factor(2, Some(-0.5));
    host.curved[0].factor = 0.9;
    host.curved[1].vector = wave(4.4);
    let before = ctx.transfers().host_to_device;
    device.set_step(&host).unwrap();
    let uploaded = ctx.transfers().host_to_device - before;
    // the timed load's vector and the timed field set's two nodes (3 values each)
    assert_eq!(uploaded, 8 * (n as u64 + 6), "bytes of one set_step");
    println!("set_step uploaded {uploaded} bytes ({n} unknowns)");
    assert_same_newton_system(&mut host, &mut device, &u, 0.8, "step 2");
}

/// A smooth field of the reference position (loads that are fields).
fn smooth_field(x: [f64; 3]) -> [f64; 3] {
    [
        (2.0 * x[1]).sin() + 0.3,
        x[0] * x[2] - 0.5,
        1.0 + x[1] * x[1] - 0.2 * x[0],
    ]
}

/// Dead loads integrated on the device are the host's bits: tractions (a constant on one face
/// set, a field on another, and both sets on one vector as the host adds them) on Q1 4-node and
/// Q2 9-node faces with the host's face rule, and the body force (constant and field) through
/// the volume quadrature for every material (the host's is the element residual at u = 0), then
/// the tractions added onto it as `hexfem run` builds its dead-load vector.
#[test]
fn device_dead_loads_are_the_hosts_bits() {
    let Some(ctx) = context() else { return };
    let field = smooth_field;
    let mut mismatches = Vec::new();
    for order in [1, 2] {
        let mesh = skewed_box(order, 3);
        let points = order + 1;
        let n = 3 * mesh.n_nodes();
        let sets: [(&str, Load); 2] = [
            ("zmax", Load::Constant([0.1, -0.2, 0.7])),
            ("xmax", Load::Field(&field)),
        ];
        // tractions alone, set by set and together
        for chosen in [&sets[..1], &sets[1..], &sets[..]] {
            let mut host = Vector::zeros(n);
            let faces: Vec<(&[mesh::CellFace], Load)> = chosen
                .iter()
                .map(|(name, load)| (mesh.face_sets[*name].as_slice(), *load))
                .collect();
            for (f, load) in &faces {
                crate::add_traction_load(&mesh, f, *load, points, &mut host).unwrap();
            }
            let mut device = DeviceTractions::new(&ctx, &mesh, &faces, points).unwrap();
            let mut f = ctx.zeros::<f64>(n).unwrap();
            device.add_to(&mut f).unwrap();
            let names: Vec<&str> = chosen.iter().map(|(name, _)| *name).collect();
            let got = ctx.download(&f).unwrap();
            println!(
                "Q{order} traction on {names:?} ({} faces): largest difference {:e}",
                device.n_faces(),
                rel_diff(&got, host.host().unwrap())
            );
            if got != host.host().unwrap() {
                mismatches.push(format!("Q{order} traction on {names:?}"));
            }
        }
        // body force, then the tractions on top
        for material in materials() {
            for (what, body) in [
                ("constant", Load::Constant([0.5, -1.0, 2.0])),
                ("field", Load::Field(&field)),
            ] {
                let mut assembler = ElasticityAssembler::new(
                    &mesh,
                    CellMaterials::uniform(material, mesh.n_cells()),
                    points,
                )
                .unwrap();
                let mut host = crate::body_force_load(&mut assembler, body).unwrap();
                let mut device_assembler = DeviceAssembler::new(&ctx, &assembler).unwrap();
                let at_points = body_force_at_points(&assembler, body).unwrap();
                let mut f = device_assembler
                    .body_force_load(&ctx.upload(&at_points).unwrap())
                    .unwrap();
                let body_bits = ctx.download(&f).unwrap() == host.host().unwrap();
                let faces: Vec<(&[mesh::CellFace], Load)> = sets
                    .iter()
                    .map(|(name, load)| (mesh.face_sets[*name].as_slice(), *load))
                    .collect();
                for (faces, load) in &faces {
                    crate::add_traction_load(&mesh, faces, *load, points, &mut host).unwrap();
                }
                let mut tractions = DeviceTractions::new(&ctx, &mesh, &faces, points).unwrap();
                tractions.add_to(&mut f).unwrap();
                let got = ctx.download(&f).unwrap();
                let all_bits = got == host.host().unwrap();
                println!(
                    "Q{order} {} body force ({what}): bits {body_bits}; with tractions: bits {all_bits}, largest difference {:e}",
                    material.name(),
                    rel_diff(&got, host.host().unwrap())
                );
                if !(body_bits && all_bits) {
                    mismatches.push(format!("Q{order} {} body force ({what})", material.name()));
                }
            }
        }
    }
    assert!(mismatches.is_empty(), "device != host: {mismatches:#?}");
}

/// Follower pressures on the device (Q1 4-node and Q2 9-node faces; one on its own load curve):
/// the residual, the tangent with the nonsymmetric load stiffness (before and after
/// elimination), the right-hand side and the residual alone are the host's bits, at two load
/// steps (the own factor going up per step).
#[test]
fn device_follower_pressure_is_the_hosts_bits() {
    let Some(ctx) = context() else { return };
    for order in [1, 2] {
        // neo-Hookean: its device element kernels are the host's bits (the decoupled model's
        // pow rounds differently), so every difference would be the pressure's
        let (assembler, u) = problem(order, 3, materials()[2]);
        let mesh = skewed_box(order, 3);
        let points = order + 1;
        let mut follower = vec![
            FollowerPressure::new(&mesh, &mesh.face_sets["xmax"], 0.8, points).unwrap(),
            FollowerPressure::new(&mesh, &mesh.face_sets["ymin"], -0.3, points).unwrap(),
        ];
        follower[1].own_factor = Some(0.25);
        let coords = assembler.coords().to_vec();
        let mut host = DiscreteProblem {
            assembler,
            constraints: twisted_box_constraints(&coords),
            external: Vector::zeros(u.len()),
            follower,
            curved: Vec::new(),
            partition: None,
        };
        assert!(!host.tangent_is_symmetric());
        DeviceProblem::supports(&host).unwrap();
        let mut device = DeviceProblem::new(&ctx, &host).unwrap();
        assert_same_newton_system(&mut host, &mut device, &u, 0.6, "pressure, step 1");
        host.follower[1].own_factor = Some(0.75);
        device.set_step(&host).unwrap();
        assert_same_newton_system(&mut host, &mut device, &u, 0.9, "pressure, step 2");
        println!("Q{order} follower pressure: the host's bits");
    }
}

/// The rigid-body modes about the deformed positions `X + u`, computed on the device from the
/// device coordinates and displacement (the AMG's near-null space of a Newton load step), are
/// the host's `rigid_body_modes` at `X + u` bit for bit, on a skewed Q1 and Q2 mesh; and the
/// device problem's own call (its uploaded mesh) gives the same.
#[test]
fn device_rigid_body_modes_equal_the_host_ones_bit_for_bit() {
    let Some(ctx) = context() else { return };
    for order in [1, 2] {
        let material = materials()[2];
        let (assembler, u) = problem(order, 3, material);
        let x: Vec<[f64; 3]> = assembler
            .coords()
            .iter()
            .zip(u.as_chunks::<3>().0)
            .map(|(x, d)| [x[0] + d[0], x[1] + d[1], x[2] + d[2]])
            .collect();
        let host = crate::rigid_body_modes(&x);
        let coords = ctx.upload(assembler.coords().as_flattened()).unwrap();
        let u_d = ctx.upload(&u).unwrap();
        let device = ctx
            .download(&deformed_rigid_body_modes(&ctx, &coords, &u_d, None).unwrap())
            .unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(device.len(), host.len(), "Q{order}");
        assert!(bits(&device) == bits(&host), "Q{order}: modes differ");
        // about `X` itself (a first load step's modes): a displacement of `-0` leaves every
        // coordinate as it is, a `-0` one too
        let mut x0 = assembler.coords().to_vec();
        x0[0][0] = -0.0;
        let coords0 = ctx.upload(x0.as_flattened()).unwrap();
        let minus_zero = ctx.upload(&vec![-0.0; u.len()]).unwrap();
        let about_x0 = ctx
            .download(&deformed_rigid_body_modes(&ctx, &coords0, &minus_zero, None).unwrap())
            .unwrap();
        let host0 = crate::rigid_body_modes(&x0);
        assert!(bits(&about_x0) == bits(&host0), "Q{order}: modes about X");
        // the problem's own call, on its uploaded mesh
        let constraints = twisted_box_constraints(assembler.coords());
        let external = Vector::from_vec(vec![0.0; u.len()]);
        let discrete = DiscreteProblem {
            assembler,
            constraints,
            external,
            follower: Vec::new(),
            curved: Vec::new(),
            partition: None,
        };
        let problem = DeviceProblem::new(&ctx, &discrete).unwrap();
        let u_v = Vector::from_vec(u.clone())
            .to_device(problem.device())
            .unwrap();
        let from_problem = problem
            .rigid_body_modes(&u_v)
            .unwrap()
            .to_host_vec()
            .unwrap();
        assert!(
            bits(&from_problem) == bits(&host),
            "Q{order}: the problem's modes differ"
        );
    }
}

/// The cells' grouping by material and formulation (tasks of cells in parallel, joined in
/// order) is the one pass's: groups in order of first appearance, each one's cells ascending,
/// an equal material and formulation at two table entries one group, one material of two
/// formulations two. Host only.
#[test]
fn material_groups_are_those_of_one_pass_over_the_cells() {
    let mats = materials();
    // more cells than three tasks; the table repeats the first material at its end
    let n_cells = 3 * (1 << 14) + 123;
    let table = vec![mats[2], mats[0], mats[4], mats[2], mats[0]];
    let of_cell: Vec<u16> = (0..n_cells)
        .map(|c| match c {
            c if c < 5 => 2,
            c if c % 11 == 0 => 4,
            c if c % 7 == 0 => 1,
            c if c % 3 == 0 => 3,
            _ => 0,
        })
        .collect();
    let materials = CellMaterials::new(table, of_cell)
        .unwrap()
        .with_formulations(vec![
            Formulation::Displacement,
            Formulation::Displacement,
            Formulation::Displacement,
            Formulation::Projected,
            Formulation::Displacement,
        ])
        .unwrap();
    let mut expected: Vec<(Material, Formulation, Vec<u32>)> = Vec::new();
    for c in 0..n_cells {
        let (m, f) = (*materials.of(c), materials.formulation_of(c));
        match expected.iter_mut().find(|(g, gf, _)| *g == m && *gf == f) {
            Some((_, _, cells)) => cells.push(c as u32),
            None => expected.push((m, f, vec![c as u32])),
        }
    }
    assert_eq!(expected.len(), 4);
    assert_eq!(
        super::elements::material_groups(&materials, n_cells),
        expected
    );
}
