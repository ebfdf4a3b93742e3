//! The assembled operator against finite differences, exact fields and itself on other thread counts.

use assembly::{rigid_body_modes, CellMaterials, Constraints, ElasticityAssembler, Prescribed};
use fem::{Load, Material, Moduli};
use linalg::{ops, Bsr, CooPlan, Vector};
use mesh::{generate_box, BoxSpec, CellKind, HexMesh};

/// A skewed, non-affine hexahedron so that no test passes by symmetry.
const CORNERS: [[f64; 3]; 8] = [
    [0.0, 0.0, 0.0],
    [1.2, 0.1, 0.0],
    [-0.1, 0.9, 0.1],
    [1.0, 1.1, -0.1],
    [0.1, 0.0, 1.0],
    [1.1, -0.1, 1.2],
    [0.0, 1.0, 0.9],
    [1.3, 1.2, 1.1],
];

fn skewed_mesh(kind: CellKind, cells: [usize; 3]) -> HexMesh {
    generate_box(&BoxSpec {
        cells,
        lower: [0.0; 3],
        upper: [1.0; 3],
        kind,
        corners: Some(CORNERS),
    })
    .unwrap()
}

fn neo_hookean() -> Material {
    Material::neo_hookean(Moduli::from_young_poisson(10.0, 0.3).unwrap())
}

/// Deterministic pseudo-random numbers in [-1, 1) (`linalg`'s SplitMix64).
fn noise(seed: u64, n: usize) -> Vec<f64> {
    let mut g = linalg::hash::SplitMix64(seed);
    (0..n).map(|_| g.next_signed_unit()).collect()
}

fn assembler(mesh: &HexMesh, material: Material) -> ElasticityAssembler {
    ElasticityAssembler::new(
        mesh,
        CellMaterials::uniform(material, mesh.n_cells()),
        mesh.order() + 1,
    )
    .unwrap()
}

/// The assembled tangent is the derivative of the assembled residual (central differences).
fn tangent_matches_finite_differences(kind: CellKind) {
    let mesh = skewed_mesh(kind, [2, 1, 2]);
    let mut asm = assembler(&mesh, neo_hookean());
    let n = 3 * mesh.n_nodes();
    let u = Vector::from_vec(noise(7, n).iter().map(|v| 0.05 * v).collect());
    let mut r = Vector::zeros(n);
    let mut k = asm.new_matrix();
    asm.residual_tangent(&u, Load::Constant([0.3, -0.2, 0.1]), &mut r, &mut k)
        .unwrap();
    let dense = k.to_dense().unwrap();
    let h = 1e-6;
    let (mut rp, mut rm) = (Vector::zeros(n), Vector::zeros(n));
    let mut worst = 0.0f64;
    let scale = dense.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for j in 0..n {
        let mut up = u.clone();
        up.host_mut().unwrap()[j] += h;
        let mut um = u.clone();
        um.host_mut().unwrap()[j] -= h;
        asm.residual(&up, Load::Constant([0.3, -0.2, 0.1]), &mut rp)
            .unwrap();
        asm.residual(&um, Load::Constant([0.3, -0.2, 0.1]), &mut rm)
            .unwrap();
        for i in 0..n {
            let fd = (rp.host().unwrap()[i] - rm.host().unwrap()[i]) / (2.0 * h);
            worst = worst.max((fd - dense[i * n + j]).abs());
        }
    }
    assert!(
        worst < 1e-6 * scale,
        "worst |K - FD| = {worst:e}, scale {scale:e}"
    );
}

#[test]
fn q1_tangent_matches_finite_differences() {
    tangent_matches_finite_differences(CellKind::Hex8);
}

#[test]
fn q2_tangent_matches_finite_differences() {
    tangent_matches_finite_differences(CellKind::Hex27);
}

/// The element loop and the COO sums are bit-identical on 1 and 3 threads.
#[test]
fn assembly_is_deterministic_across_thread_counts() {
    let mesh = skewed_mesh(CellKind::Hex8, [5, 4, 3]);
    let n = 3 * mesh.n_nodes();
    let u = Vector::from_vec(noise(3, n).iter().map(|v| 0.02 * v).collect());
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                let mut asm = assembler(&mesh, neo_hookean());
                let mut r = Vector::zeros(n);
                let mut k = asm.new_matrix();
                asm.residual_tangent(&u, Load::Constant([0.0, 0.0, -1.0]), &mut r, &mut k)
                    .unwrap();
                (r.to_host_vec().unwrap(), k.host().unwrap().to_vec())
            })
    };
    let (r1, k1) = run(1);
    let (r3, k3) = run(3);
    assert!(r1.iter().zip(&r3).all(|(a, b)| a.to_bits() == b.to_bits()));
    assert!(k1.iter().zip(&k3).all(|(a, b)| a.to_bits() == b.to_bits()));
}

/// Runs `f` on a rayon pool of `threads` threads.
fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// Cells are assembled batch after batch (one plan segment each); residual and tangent are
/// bit-identical to summing every element's contributions at once, in contribution order (a
/// one-segment plan for the tangent, ordered accumulation for the residual), on 1 and 3 threads.
fn batched_assembly_matches_one_pass(kind: CellKind, cells: [usize; 3]) {
    let mesh = skewed_mesh(kind, cells);
    let (npc, n_nodes) = (mesh.nodes_per_cell(), mesh.n_nodes());
    let u = Vector::from_vec(noise(5, 3 * n_nodes).iter().map(|v| 0.02 * v).collect());
    let body = Load::Constant([0.3, -0.2, 0.1]);
    let asm = assembler(&mesh, neo_hookean());
    assert!(
        asm.matrix_plan().n_segments() >= 2,
        "the mesh must span several batches"
    );
    let elements = asm
        .map_cells(&u, |_, x, ue, material| {
            let (mut re, mut ke) = (vec![[0.0; 3]; npc], vec![[0.0; 9]; npc * npc]);
            asm.kernel()
                .residual_tangent(x, ue, material, body, &mut re, Some(&mut ke))?;
            Ok((re, ke))
        })
        .unwrap();
    let (mut rows, mut cols, mut values) = (Vec::new(), Vec::new(), Vec::new());
    let mut r_ref = vec![0.0; 3 * n_nodes];
    for (c, (re, ke)) in elements.iter().enumerate() {
        let nodes = mesh.cell_nodes(c);
        for (a, &na) in nodes.iter().enumerate() {
            for i in 0..3 {
                r_ref[3 * na + i] += re[a][i];
            }
            for (b, &nb) in nodes.iter().enumerate() {
                rows.push(na as u32);
                cols.push(nb as u32);
                values.extend_from_slice(&ke[a * npc + b]);
            }
        }
    }
    let plan = CooPlan::new(n_nodes, n_nodes, &rows, &cols).unwrap();
    let mut k_ref = Bsr::zeros(plan.pattern().clone(), 3, 3);
    plan.assemble(&values, &mut k_ref).unwrap();
    for threads in [1, 3] {
        let (r, k) = on_threads(threads, || {
            let mut asm = assembler(&mesh, neo_hookean());
            let mut r = Vector::from_vec(vec![f64::NAN; 3 * n_nodes]);
            let mut k = asm.new_matrix();
            k.host_mut().unwrap().fill(f64::NAN);
            asm.residual_tangent(&u, body, &mut r, &mut k).unwrap();
            (r, k)
        });
        assert_eq!(k.pattern(), k_ref.pattern());
        let same = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(
            same(k.host().unwrap(), k_ref.host().unwrap()),
            "{kind:?} tangent on {threads} threads"
        );
        assert!(
            same(r.host().unwrap(), &r_ref),
            "{kind:?} residual on {threads} threads"
        );
    }
}

#[test]
fn q1_batched_assembly_matches_one_pass() {
    batched_assembly_matches_one_pass(CellKind::Hex8, [16, 12, 12]);
}

#[test]
fn q2_batched_assembly_matches_one_pass() {
    batched_assembly_matches_one_pass(CellKind::Hex27, [6, 6, 6]);
}

/// When elements fail in several batches, the first failing cell in cell order is reported,
/// whatever the thread count, by the residual and by the residual with tangent.
#[test]
fn the_first_failing_cell_is_reported_across_batches() {
    let mesh = skewed_mesh(CellKind::Hex8, [16, 12, 12]);
    let n = 3 * mesh.n_nodes();
    let asm = assembler(&mesh, neo_hookean());
    assert!(
        asm.matrix_plan().n_segments() >= 2,
        "the mesh must span several batches"
    );
    // Throw the far corner node of a few cells through their neighbours.
    let mut u = Vector::zeros(n);
    for cell in [1000, 1905, 2201] {
        let node = mesh.cell_nodes(cell)[7];
        u.host_mut().unwrap()[3 * node..3 * node + 3].copy_from_slice(&[-0.5, -0.4, -0.6]);
    }
    let fails = asm
        .map_cells(&u, |_, x, ue, material| {
            let mut re = vec![[0.0; 3]; x.len()];
            Ok(asm
                .kernel()
                .residual_tangent(x, ue, material, Load::None, &mut re, None)
                .is_err())
        })
        .unwrap();
    let first = fails.iter().position(|&f| f).expect("some cells fail");
    let last = fails.iter().rposition(|&f| f).expect("some cells fail");
    let cells_per_batch = asm.matrix_plan().segment_len() / 64;
    assert!(
        last / cells_per_batch > first / cells_per_batch,
        "failures in several batches"
    );
    for threads in [1, 3] {
        on_threads(threads, || {
            let mut asm = assembler(&mesh, neo_hookean());
            let mut r = Vector::zeros(n);
            let err = asm
                .residual(&u, Load::None, &mut r)
                .expect_err("inverted cells");
            assert_eq!(
                err.cell(),
                Some(first),
                "residual on {threads} threads: {err}"
            );
            let mut k = asm.new_matrix();
            let err = asm
                .residual_tangent(&u, Load::None, &mut r, &mut k)
                .expect_err("inverted cells");
            assert_eq!(
                err.cell(),
                Some(first),
                "tangent on {threads} threads: {err}"
            );
        });
    }
}

/// Rigid-body modes lie in the kernel of the unconstrained linear-elastic stiffness.
#[test]
fn rigid_body_modes_are_in_the_kernel_of_the_stiffness() {
    for kind in [CellKind::Hex8, CellKind::Hex27] {
        let mesh = skewed_mesh(kind, [2, 2, 2]);
        let mut asm = assembler(
            &mesh,
            Material::linear(Moduli::from_young_poisson(1.0, 0.25).unwrap()),
        );
        let n = 3 * mesh.n_nodes();
        let mut r = Vector::zeros(n);
        let mut k = asm.new_matrix();
        asm.residual_tangent(&Vector::zeros(n), Load::None, &mut r, &mut k)
            .unwrap();
        let modes = rigid_body_modes(&mesh.coords);
        for m in 0..6 {
            let v = Vector::from_vec((0..n).map(|i| modes[i * 6 + m]).collect());
            let mut kv = Vector::zeros(n);
            k.spmv(&v, &mut kv).unwrap();
            assert!(
                ops::norm2(&kv).unwrap() < 1e-12 * ops::norm2(&v).unwrap(),
                "{kind:?} mode {m}: |K v| = {:e}",
                ops::norm2(&kv).unwrap()
            );
        }
    }
}

/// Dense Gaussian elimination with partial pivoting (small test systems only).
fn dense_solve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let n = b.len();
    let mut m: Vec<f64> = a.to_vec();
    let mut x = b.to_vec();
    for col in 0..n {
        let p = (col..n)
            .max_by(|&i, &j| m[i * n + col].abs().total_cmp(&m[j * n + col].abs()))
            .unwrap();
        for c in 0..n {
            m.swap(col * n + c, p * n + c);
        }
        x.swap(col, p);
        for row in col + 1..n {
            let f = m[row * n + col] / m[col * n + col];
            for c in col..n {
                m[row * n + c] -= f * m[col * n + c];
            }
            x[row] -= f * x[col];
        }
    }
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|c| m[row * n + c] * x[c]).sum();
        x[row] = (x[row] - s) / m[row * n + row];
    }
    x
}

/// Patch test: a linear displacement imposed on the boundary of a distorted mesh is reproduced at
/// the interior nodes to round-off (linear elasticity, Q1 and Q2), through the constraint path.
#[test]
fn patch_test_reproduces_linear_fields() {
    for kind in [CellKind::Hex8, CellKind::Hex27] {
        let mesh = skewed_mesh(kind, [3, 3, 3]);
        let mut asm = assembler(
            &mesh,
            Material::linear(Moduli::from_young_poisson(2.0, 0.3).unwrap()),
        );
        let exact = |x: [f64; 3]| {
            [
                1e-3 * (x[0] + 2.0 * x[1] - x[2]),
                1e-3 * (0.5 * x[0] - x[2]),
                1e-3 * (x[1] + 3.0 * x[2]),
            ]
        };
        let boundary: Vec<usize> = ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"]
            .iter()
            .flat_map(|s| mesh.set_nodes(s).unwrap())
            .collect();
        // One `Components` entry per boundary node with its exact value.
        let prescribed = boundary
            .iter()
            .map(|&i| {
                let v = exact(mesh.coords[i]);
                Prescribed::Components {
                    set: "boundary".into(),
                    nodes: vec![i],
                    values: [Some(v[0]), Some(v[1]), Some(v[2])],
                }
            })
            .collect();
        let cons = Constraints::new(mesh.n_nodes(), prescribed, &asm.orphan_nodes()).unwrap();
        let n = 3 * mesh.n_nodes();
        let mut u = Vector::zeros(n);
        cons.write_prescribed(1.0, &mesh.coords, &mut u).unwrap();
        let mut r = Vector::zeros(n);
        let mut k: Bsr = asm.new_matrix();
        asm.residual_tangent(&u, Load::None, &mut r, &mut k)
            .unwrap();
        cons.eliminate_in_matrix(&mut k).unwrap();
        ops::scale(-1.0, &mut r).unwrap();
        cons.zero_constrained(&mut r).unwrap();
        let du = dense_solve(&k.to_dense().unwrap(), r.host().unwrap());
        for (node, x) in mesh.coords.iter().enumerate() {
            let want = exact(*x);
            for d in 0..3 {
                let got = u.host().unwrap()[3 * node + d] + du[3 * node + d];
                assert!(
                    (got - want[d]).abs() < 1e-13,
                    "{kind:?} node {node} comp {d}: {got} vs {}",
                    want[d]
                );
            }
        }
    }
}

/// An inverted element is named as its mesh names it (cell index, and the Gmsh element tag when
/// the mesh has one), at construction and when a displacement inverts it during a solve.
#[test]
fn an_inverted_element_is_named() {
    let good = skewed_mesh(CellKind::Hex8, [2, 1, 1]);
    let mut mesh = good.clone();
    // swap two corner nodes of cell 1 to invert it
    let nodes = mesh.cell_nodes(1).to_vec();
    mesh.cells[8] = nodes[1];
    mesh.cells[9] = nodes[0];
    let materials = || CellMaterials::uniform(neo_hookean(), 2);
    let err = ElasticityAssembler::new(&mesh, materials(), 2)
        .err()
        .expect("inverted");
    assert!(
        matches!(err, assembly::AssemblyError::InvalidElement { cell: 1, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("element geometry invalid in cell 1: non-positive Jacobian"),
        "{err}"
    );
    mesh.cell_tags = Some(mesh::ElementTags::gmsh(vec![41, 42]));
    let err = ElasticityAssembler::new(&mesh, materials(), 2)
        .err()
        .expect("inverted");
    assert!(
        err.to_string()
            .starts_with("element geometry invalid in Gmsh element 42 (cell 1): "),
        "{err}"
    );

    // Pushing the x-max face back through the middle plane inverts cell 1 only.
    let mut u = Vector::zeros(3 * good.n_nodes());
    for &n in &good.node_sets["xmax"] {
        u.host_mut().unwrap()[3 * n] = -3.0;
    }
    for (tags, name) in [
        (None, "cell 1"),
        (
            Some(mesh::ElementTags::new("Abaqus", vec![41, 42])),
            "Abaqus element 42 (cell 1)",
        ),
    ] {
        let mut mesh = good.clone();
        mesh.cell_tags = tags;
        let mut assembler = ElasticityAssembler::new(&mesh, materials(), 2).unwrap();
        let mut r = Vector::zeros(3 * mesh.n_nodes());
        let err = assembler
            .residual(&u, Load::None, &mut r)
            .expect_err("inverted during the solve");
        assert!(
            matches!(err, assembly::AssemblyError::ElementFailure { cell: 1, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string().starts_with(&format!(
                "element failure in {name}: non-positive volume ratio"
            )),
            "{err}"
        );
    }
}

/// A follower pressure's full load stiffness: the tangent of a problem with pressure on two
/// skewed face sets (an open surface, so the load stiffness is not symmetric) is the derivative
/// of its residual (central differences, Q1 and Q2), and it is not symmetric.
fn follower_tangent_matches_finite_differences(kind: CellKind) {
    let mesh = skewed_mesh(kind, [2, 1, 2]);
    let n = 3 * mesh.n_nodes();
    let points = mesh.order() + 1;
    let follower = ["zmax", "xmin"]
        .iter()
        .zip([2.0, -1.3])
        .map(|(set, p)| {
            assembly::FollowerPressure::new(&mesh, &mesh.face_sets[*set], p, points).unwrap()
        })
        .collect();
    let asm = assembler(&mesh, neo_hookean());
    let constraints = Constraints::new(mesh.n_nodes(), Vec::new(), &asm.orphan_nodes()).unwrap();
    let mut problem = assembly::DiscreteProblem {
        assembler: asm,
        constraints,
        external: Vector::zeros(n),
        follower,
        curved: Vec::new(),
        partition: None,
    };
    assert!(!problem.tangent_is_symmetric());
    let u = Vector::from_vec(noise(11, n).iter().map(|v| 0.05 * v).collect());
    let load_factor = 0.7;
    let mut system = problem.new_system().unwrap();
    problem.linearize(&u, load_factor, &mut system).unwrap();
    let dense = system.tangent.to_dense().unwrap();
    let h = 1e-6;
    let (mut rp, mut rm) = (Vector::zeros(n), Vector::zeros(n));
    let (mut worst, mut skew) = (0.0f64, 0.0f64);
    let scale = dense.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for j in 0..n {
        let mut up = u.clone();
        up.host_mut().unwrap()[j] += h;
        let mut um = u.clone();
        um.host_mut().unwrap()[j] -= h;
        problem.residual(&up, load_factor, &mut rp).unwrap();
        problem.residual(&um, load_factor, &mut rm).unwrap();
        for i in 0..n {
            let fd = (rp.host().unwrap()[i] - rm.host().unwrap()[i]) / (2.0 * h);
            worst = worst.max((fd - dense[i * n + j]).abs());
            skew = skew.max((dense[i * n + j] - dense[j * n + i]).abs());
        }
    }
    assert!(
        worst < 1e-6 * scale,
        "worst |K - FD| = {worst:e}, scale {scale:e}"
    );
    assert!(skew > 1e-3 * scale, "the load stiffness came out symmetric");
}

#[test]
fn q1_follower_pressure_tangent_matches_finite_differences() {
    follower_tangent_matches_finite_differences(CellKind::Hex8);
}

#[test]
fn q2_follower_pressure_tangent_matches_finite_differences() {
    follower_tangent_matches_finite_differences(CellKind::Hex27);
}
