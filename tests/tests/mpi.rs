//! Distributed assembly on 2 and 4 ranks, some tests also on 8 (2 x 2 x 2 boxes: edge and
//! corner neighbours; each test starts itself under `mpirun`): every rank
//! assembles the rows it owns on its mesh part (one layer of ghost cells, no communication);
//! the owned rows and residual entries equal the serial ones bit for bit, the distributed SpMV
//! equals the serial one to rounding. Box meshes are generated distributed; the Gmsh mesh is
//! partitioned by METIS.

use std::sync::Arc;

use assembly::{CellMaterials, ElasticityAssembler};
use fem::{Load, Material};
use linalg::comm::{launch::on_ranks, Comm};
use linalg::dist::{DistBsr, DistPattern, RowPartition};
use linalg::hash::{signed_unit, splitmix64};
use linalg::{Bsr, Vector};
use mesh::{BoxSpec, CellKind, HexMesh, MeshPart};

/// A smooth, small displacement of every node (serial id `s`), so the neo-Hookean tangent
/// depends on it.
fn displacement(s: u64, x: [f64; 3]) -> [f64; 3] {
    let h = |c: u64| 0.01 * signed_unit(splitmix64(31 * s + c));
    [0.05 * x[1] + h(0), -0.03 * x[0] + h(1), 0.02 * x[2] + h(2)]
}

struct Assembled {
    residual: Vec<f64>,
    tangent: Bsr,
}

/// Residual and tangent of `mesh` (nodes with serial ids `serial_ids`).
fn assemble(mesh: &HexMesh, serial_ids: &[u64]) -> Assembled {
    let material = Material::NeoHookean {
        lambda: 2.0,
        mu: 1.0,
    };
    let mut assembler =
        ElasticityAssembler::new(mesh, CellMaterials::uniform(material, mesh.n_cells()), 2)
            .unwrap();
    let u: Vec<f64> = serial_ids
        .iter()
        .zip(&mesh.coords)
        .flat_map(|(&s, &x)| displacement(s, x))
        .collect();
    let mut r = Vector::zeros(u.len());
    let mut k = assembler.new_matrix();
    assembler
        .residual_tangent(
            &Vector::from_vec(u),
            Load::Constant([0.0, 0.0, -0.1]),
            &mut r,
            &mut k,
        )
        .unwrap();
    Assembled {
        residual: r.to_host_vec().unwrap(),
        tangent: k,
    }
}

/// The block of `a` at `(row, col)`, if stored.
fn block(a: &Bsr, row: usize, col: usize) -> Option<&[f64]> {
    let p = a.pattern();
    let cols = p.row(row);
    let k = cols.binary_search(&(col as u32)).ok()?;
    Some(a.host_block(p.row_ptr()[row] + k).unwrap())
}

/// Assembles on this rank's part, checks it against the serial assembly of `serial`.
fn check_distributed_assembly(comm: &Arc<dyn Comm>, serial: &HexMesh, part: &MeshPart) {
    let whole: Vec<u64> = (0..serial.n_nodes() as u64).collect();
    let reference = assemble(serial, &whole);
    let local = assemble(&part.mesh, &part.node_serial_ids);
    let n_owned = part.n_owned_nodes();
    let partition = RowPartition::new(comm.clone(), n_owned).unwrap();
    assert_eq!(
        partition.owned_range(),
        part.node_offsets[part.rank]..part.node_offsets[part.rank + 1]
    );
    let pattern =
        DistPattern::from_local(partition, local.tangent.pattern(), &part.node_globals, 3).unwrap();
    let mut a = DistBsr::zeros(pattern.clone());
    a.set_from_local(&local.tangent).unwrap();

    // Owned residual entries and owned rows: the serial values, bit for bit.
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for i in 0..n_owned {
        let s = part.node_serial_ids[i] as usize;
        assert_eq!(
            bits(&local.residual[3 * i..3 * i + 3]),
            bits(&reference.residual[3 * s..3 * s + 3])
        );
    }
    let serial_of_global = |g: u64| -> usize {
        let l = part
            .node_globals
            .iter()
            .position(|&x| x == g)
            .expect("a local node");
        part.node_serial_ids[l] as usize
    };
    let ghosts = pattern.halo().ghosts();
    for i in 0..n_owned {
        let s = part.node_serial_ids[i] as usize;
        let mut n_blocks = 0;
        let first = pattern.partition().owned_range().start;
        for (m, cols) in [(a.diag(), None), (a.offd(), Some(ghosts))] {
            let p = m.pattern();
            for (k, &c) in p.row(i).iter().enumerate() {
                let g = match cols {
                    None => first + c as u64,
                    Some(ghosts) => ghosts[c as usize],
                };
                let want =
                    block(&reference.tangent, s, serial_of_global(g)).expect("a serial block");
                assert_eq!(bits(m.host_block(p.row_ptr()[i] + k).unwrap()), bits(want));
                n_blocks += 1;
            }
        }
        // Every block of the serial row, no more.
        assert_eq!(n_blocks, reference.tangent.pattern().row(s).len());
    }

    // SpMV: the distributed product's owned entries equal the serial product to rounding.
    let xs: Vec<f64> = (0..3 * serial.n_nodes() as u64)
        .map(|e| signed_unit(splitmix64(e + 99)))
        .collect();
    let mut ys = Vector::zeros(xs.len());
    reference
        .tangent
        .spmv(&Vector::from_vec(xs.clone()), &mut ys)
        .unwrap();
    let ys = ys.to_host_vec().unwrap();
    let mut x = a.new_vector();
    for i in 0..n_owned {
        let s = part.node_serial_ids[i] as usize;
        x.host_mut().unwrap()[3 * i..3 * i + 3].copy_from_slice(&xs[3 * s..3 * s + 3]);
    }
    let mut y = a.new_vector();
    a.spmv(&mut x, &mut y).unwrap();
    let scale = ys.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for i in 0..n_owned {
        let s = part.node_serial_ids[i] as usize;
        for c in 0..3 {
            let (got, want) = (y.host().unwrap()[3 * i + c], ys[3 * s + c]);
            assert!(
                (got - want).abs() <= 1e-13 * scale,
                "node {s}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn distributed_box_assembly_and_spmv_equal_the_serial_ones() {
    on_ranks(
        "distributed_box_assembly_and_spmv_equal_the_serial_ones",
        &[2, 4, 8],
        |comm| {
            for spec in [
                BoxSpec::new([6, 3, 4], [0.0; 3], [3.0, 1.0, 2.0], CellKind::Hex8),
                BoxSpec::new([2, 2, 3], [0.0; 3], [1.0, 1.0, 1.5], CellKind::Hex27),
            ] {
                if comm.size() == 8 {
                    // both boxes are cut 2 x 2 x 2: corner neighbours
                    let grid = mesh::BoxRankGrid::new(spec.node_counts(), 8);
                    assert_eq!(grid.ranks, [2, 2, 2]);
                }
                let serial = mesh::generate_box(&spec).unwrap();
                let part = mesh::generate_box_part(&spec, comm.rank(), comm.size()).unwrap();
                check_distributed_assembly(comm, &serial, &part);
            }
        },
    );
}

#[test]
fn metis_partitioned_gmsh_assembly_and_spmv_equal_the_serial_ones() {
    on_ranks(
        "metis_partitioned_gmsh_assembly_and_spmv_equal_the_serial_ones",
        &[2, 4],
        |comm| {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../inputs/meshes/cook_q1.msh");
            let serial = mesh::read_gmsh(std::path::Path::new(path)).unwrap();
            let parts = mesh::metis_cell_parts(&serial, comm.size()).unwrap();
            let part = mesh::partition_mesh(&serial, &parts, comm.rank(), comm.size()).unwrap();
            check_distributed_assembly(comm, &serial, &part);
        },
    );
}

/// Linear elasticity on a box, shifted by `shift * I` so that it is definite without
/// constraints; returns the matrix of `mesh` (local or whole).
fn shifted_stiffness(mesh: &HexMesh, shift: f64) -> Bsr {
    let material = Material::Linear {
        lambda: 1.5,
        mu: 1.0,
    };
    let mut assembler =
        ElasticityAssembler::new(mesh, CellMaterials::uniform(material, mesh.n_cells()), 2)
            .unwrap();
    let n = 3 * mesh.n_nodes();
    let mut k = assembler.new_matrix();
    assembler
        .residual_tangent(&Vector::zeros(n), Load::None, &mut Vector::zeros(n), &mut k)
        .unwrap();
    for i in 0..mesh.n_nodes() {
        let p = k.pattern().clone();
        let slot = p.row_ptr()[i] + p.row(i).binary_search(&(i as u32)).unwrap();
        let b = k.host_block_mut(slot).unwrap();
        for d in 0..3 {
            b[4 * d] += shift;
        }
    }
    k
}

#[test]
fn distributed_cg_with_point_block_jacobi_matches_the_serial_solve() {
    on_ranks(
        "distributed_cg_with_point_block_jacobi_matches_the_serial_solve",
        &[2, 4],
        |comm| {
            let spec = BoxSpec::new([10, 4, 4], [0.0; 3], [5.0, 1.0, 1.0], CellKind::Hex8);
            let serial = mesh::generate_box(&spec).unwrap();
            let part = mesh::generate_box_part(&spec, comm.rank(), comm.size()).unwrap();
            let params = amg::CgParams {
                rtol: 1e-10,
                ..Default::default()
            };
            let b_of = |s: u64, c: usize| signed_unit(splitmix64(3 * s + c as u64 + 12345));

            let k = shifted_stiffness(&serial, 1e-3);
            let b = Vector::from_vec(
                (0..3 * serial.n_nodes())
                    .map(|e| b_of(e as u64 / 3, e % 3))
                    .collect(),
            );
            let mut x = Vector::zeros(b.len());
            let pbj = amg::PointBlockJacobi::new(&k).unwrap();
            let reference = amg::cg(&k, &b, &mut x, &pbj, &params).unwrap();
            assert!(reference.converged);
            let x = x.to_host_vec().unwrap();

            let solve = || {
                let local = shifted_stiffness(&part.mesh, 1e-3);
                let partition = RowPartition::new(comm.clone(), part.n_owned_nodes()).unwrap();
                let pattern =
                    DistPattern::from_local(partition, local.pattern(), &part.node_globals, 3)
                        .unwrap();
                let mut a = DistBsr::zeros(pattern);
                a.set_from_local(&local).unwrap();
                let mut bd = a.new_owned_vector();
                for (e, v) in bd.host_mut().unwrap().iter_mut().enumerate() {
                    *v = b_of(part.node_serial_ids[e / 3], e % 3);
                }
                let pbj = amg::PointBlockJacobi::new(a.diag()).unwrap();
                let mut xd = a.new_owned_vector();
                let outcome = amg::cg_operator(&a, &bd, &mut xd, &pbj, &params).unwrap();
                (outcome, xd.to_host_vec().unwrap())
            };
            let (outcome, xd) = solve();
            assert!(outcome.converged);
            assert_eq!(
                outcome.iterations, reference.iterations,
                "same CG iterations as serial"
            );
            let mut err = [0.0, 0.0];
            for (e, v) in xd.iter().enumerate() {
                let s = 3 * part.node_serial_ids[e / 3] as usize + e % 3;
                err[0] += (v - x[s]).powi(2);
                err[1] += x[s].powi(2);
            }
            comm.allreduce_sum(&mut err).unwrap();
            assert!(
                err[0].sqrt() <= 1e-10 * err[1].sqrt(),
                "relative error {}",
                (err[0] / err[1]).sqrt()
            );
            // Bit-identical from run to run for a fixed rank count.
            let (again, xd2) = solve();
            assert_eq!(
                again
                    .residual_history
                    .iter()
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>(),
                outcome
                    .residual_history
                    .iter()
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>()
            );
            assert_eq!(
                xd.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                xd2.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        },
    );
}

/// The node graph of `mesh` (nodes sharing a cell), rows `rows` only, neighbours ordered by
/// serial id, with symmetric hashed weights: (row_ptr, neighbours as local nodes, weights).
fn node_graph(mesh: &HexMesh, serial_ids: &[u64], rows: usize) -> (Vec<usize>, Vec<u32>, Vec<f64>) {
    let mut adjacent = vec![std::collections::BTreeSet::new(); rows];
    for c in 0..mesh.n_cells() {
        let nodes = mesh.cell_nodes(c);
        for &a in nodes {
            if a < rows {
                for &b in nodes {
                    if b != a {
                        adjacent[a].insert((serial_ids[b], b));
                    }
                }
            }
        }
    }
    let (mut row_ptr, mut cols, mut weights) = (vec![0], Vec::new(), Vec::new());
    for (a, set) in adjacent.iter().enumerate() {
        for &(sb, b) in set {
            let (lo, hi) = (serial_ids[a].min(sb), serial_ids[a].max(sb));
            cols.push(b as u32);
            // Few distinct weights, so that ties between aggregates occur and must break alike.
            weights.push(1.0 + (splitmix64(lo * 7919 + hi) % 3) as f64);
        }
        row_ptr.push(cols.len());
    }
    (row_ptr, cols, weights)
}

/// Each vertex's aggregate named by its smallest member (`u64::MAX`: none), from a vertex ->
/// aggregate label map over all vertices.
fn by_first_member(labels: &[u64]) -> Vec<u64> {
    let mut first = std::collections::HashMap::new();
    for (v, &l) in labels.iter().enumerate() {
        first.entry(l).or_insert(v as u64);
    }
    labels
        .iter()
        .map(|l| {
            if *l == u64::from(u32::MAX) {
                u64::MAX
            } else {
                first[l]
            }
        })
        .collect()
}

/// The distributed aggregates of `g` equal the serial aggregates of `whole` (as sets of
/// vertices: the labels differ), with and without merging of small aggregates, and the
/// distributed labels (roots' serial ids) order the aggregates as the serial ids do.
fn check_aggregates(
    comm: &Arc<dyn Comm>,
    whole: &amg::StrengthGraph,
    g: &amg::dist_aggregation::DistGraph,
    part: &MeshPart,
    distance: amg::aggregation::MisDistance,
) {
    let n_owned = part.n_owned_nodes();
    let none = u64::from(u32::MAX);
    // (1, 1): no merging; (3, 6): the AMG's (single vertices merge); then more and more merges.
    let mut merged = 0;
    for (bs, min_dofs) in [(1, 1), (3, 6), (1, 4), (1, 12), (1, 30)] {
        let aggs = amg::aggregation::aggregate(whole, distance, bs, min_dofs);
        let serial: Vec<u64> = aggs.assignment().iter().map(|&a| u64::from(a)).collect();
        let labels = amg::dist_aggregation::dist_aggregate(g, distance, bs, min_dofs).unwrap();
        let mine: Vec<u64> = (0..n_owned)
            .flat_map(|v| [part.node_serial_ids[v], u64::from(labels[v])])
            .collect();
        let mut all = vec![none; whole.n_vertices()];
        for pairs in comm.allgatherv_u64(&mine).unwrap() {
            for p in pairs.chunks(2) {
                all[p[0] as usize] = p[1];
            }
        }
        assert_eq!(
            by_first_member(&all),
            by_first_member(&serial),
            "bs {bs}, min_dofs {min_dofs}"
        );
        let mut pairs: Vec<(u64, u64)> = serial.iter().copied().zip(all.iter().copied()).collect();
        pairs.sort_unstable();
        pairs.dedup();
        assert!(
            pairs.windows(2).all(|w| w[1].0 == none || w[0].1 < w[1].1),
            "label order"
        );
        if bs == 1 && min_dofs > 1 {
            let unmerged = amg::aggregation::aggregate(whole, distance, 1, 1).n_aggregates();
            merged += unmerged - aggs.n_aggregates();
        }
    }
    assert!(
        merged > 0 || distance == amg::aggregation::MisDistance::Two,
        "merging was exercised"
    );
}

#[test]
fn distributed_mis_and_aggregates_equal_the_serial_ones() {
    use amg::aggregation::{mis, MisDistance};
    use amg::dist_aggregation::{dist_mis, DistGraph};
    use amg::StrengthGraph;
    use linalg::dist::HaloPlan;

    on_ranks(
        "distributed_mis_and_aggregates_equal_the_serial_ones",
        &[2, 4],
        |comm| {
            let gmsh = mesh::read_gmsh(std::path::Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../inputs/meshes/cook_q1.msh"
            )))
            .unwrap();
            let boxes = [
                BoxSpec::new([9, 4, 3], [0.0; 3], [3.0, 1.0, 1.0], CellKind::Hex8),
                BoxSpec::new([3, 3, 4], [0.0; 3], [1.0; 3], CellKind::Hex27),
            ];
            let mut cases: Vec<(HexMesh, MeshPart)> = boxes
                .iter()
                .map(|spec| {
                    let part = mesh::generate_box_part(spec, comm.rank(), comm.size()).unwrap();
                    (mesh::generate_box(spec).unwrap(), part)
                })
                .collect();
            let parts = mesh::metis_cell_parts(&gmsh, comm.size()).unwrap();
            let part = mesh::partition_mesh(&gmsh, &parts, comm.rank(), comm.size()).unwrap();
            cases.push((gmsh, part));
            for (serial, part) in &cases {
                let ids: Vec<u64> = (0..serial.n_nodes() as u64).collect();
                let (p, c, w) = node_graph(serial, &ids, serial.n_nodes());
                let whole = StrengthGraph::from_parts(p, c, w);
                let n_owned = part.n_owned_nodes();
                let (p, c, w) = node_graph(&part.mesh, &part.node_serial_ids, n_owned);
                let partition = RowPartition::new(comm.clone(), n_owned).unwrap();
                let halo =
                    HaloPlan::new(&partition, part.node_globals[n_owned..].to_vec(), 1).unwrap();
                let g = DistGraph {
                    graph: StrengthGraph::from_parts(p, c, w),
                    serial_ids: part.node_serial_ids.clone(),
                    halo: Arc::new(halo),
                };
                for distance in [MisDistance::One, MisDistance::Two] {
                    let roots = mis(&whole, distance);
                    let mine = dist_mis(&g, distance).unwrap();
                    for v in 0..n_owned {
                        assert_eq!(
                            mine[v], roots[part.node_serial_ids[v] as usize],
                            "vertex {}",
                            part.node_serial_ids[v]
                        );
                    }
                    check_aggregates(comm, &whole, &g, part, distance);
                }
            }
        },
    );
}

/// Collective: the distributed AMG tests' two meshes, each whole and as this rank's part: a
/// 9 x 4 x 3 box (slabs) and the Cook membrane's Gmsh mesh (METIS parts).
fn aggregation_meshes(comm: &Arc<dyn Comm>) -> [(HexMesh, MeshPart); 2] {
    let spec = BoxSpec::new([9, 4, 3], [0.0; 3], [3.0, 1.0, 1.0], CellKind::Hex8);
    let gmsh = mesh::read_gmsh(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../inputs/meshes/cook_q1.msh"
    )))
    .unwrap();
    let parts = mesh::metis_cell_parts(&gmsh, comm.size()).unwrap();
    [
        (
            mesh::generate_box(&spec).unwrap(),
            mesh::generate_box_part(&spec, comm.rank(), comm.size()).unwrap(),
        ),
        (
            gmsh.clone(),
            mesh::partition_mesh(&gmsh, &parts, comm.rank(), comm.size()).unwrap(),
        ),
    ]
}

/// Collective: the operator assembled on this rank's `part` as a `DistBsr` of its owned rows,
/// with the number of owned vertices.
fn part_operator(comm: &Arc<dyn Comm>, part: &MeshPart) -> (DistBsr, usize) {
    let local = assemble(&part.mesh, &part.node_serial_ids);
    let n_owned = part.n_owned_nodes();
    let partition = RowPartition::new(comm.clone(), n_owned).unwrap();
    let pattern =
        DistPattern::from_local(partition, local.tangent.pattern(), &part.node_globals, 3).unwrap();
    let mut a = DistBsr::zeros(pattern);
    a.set_from_local(&local.tangent).unwrap();
    (a, n_owned)
}

/// Collective: on each of `cases` (a mesh whole and as this rank's part), the distributed
/// strength graph of the assembled operator has the serial graph's rows (edges in the same
/// order, weights bit for bit) and its aggregates are the serial ones (`check_aggregates`).
fn check_strength_graph_and_aggregates(comm: &Arc<dyn Comm>, cases: &[(HexMesh, MeshPart)]) {
    use amg::aggregation::MisDistance;
    use amg::dist_aggregation::dist_strength_graph;

    for (serial, part) in cases {
        let ids: Vec<u64> = (0..serial.n_nodes() as u64).collect();
        let whole = assemble(serial, &ids).tangent;
        let (a, n_owned) = part_operator(comm, part);
        for threshold in [0.0, 0.08] {
            let g_serial = amg::strength_graph(&whole, threshold).unwrap();
            let g = dist_strength_graph(&a, threshold, &part.node_serial_ids[..n_owned]).unwrap();
            let mut n_edges = [0.0, 0.0];
            for v in 0..n_owned {
                let s = part.node_serial_ids[v] as usize;
                let mine: Vec<u64> = g
                    .graph
                    .neighbours(v)
                    .iter()
                    .map(|&u| g.serial_ids[u as usize])
                    .collect();
                let want: Vec<u64> = g_serial.neighbours(s).iter().map(|&u| u as u64).collect();
                assert_eq!(mine, want, "row {s}");
                let bits = |w: &[f64]| w.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(g.graph.weights(v)), bits(g_serial.weights(s)));
                n_edges[0] += g.graph.degree(v) as f64;
            }
            n_edges[1] = g_serial.n_edges() as f64 / comm.size() as f64;
            comm.allreduce_sum(&mut n_edges).unwrap();
            assert_eq!(n_edges[0], g_serial.n_edges() as f64);
            for distance in [MisDistance::One, MisDistance::Two] {
                check_aggregates(comm, &g_serial, &g, part, distance);
            }
        }
    }
}

#[test]
fn distributed_strength_graph_and_aggregates_of_the_assembled_operator_equal_the_serial_ones() {
    on_ranks(
        "distributed_strength_graph_and_aggregates_of_the_assembled_operator_equal_the_serial_ones",
        &[2, 4],
        |comm| check_strength_graph_and_aggregates(comm, &aggregation_meshes(comm)),
    );
}

/// The same on 1 and 3 ranks, with a box of several thousand nodes besides (rows of a rank
/// spread over several tasks of the graph's passes) and the Cook membrane's METIS parts.
#[test]
fn distributed_strength_graph_and_aggregates_equal_the_serial_ones_on_one_and_three_ranks() {
    on_ranks(
        "distributed_strength_graph_and_aggregates_equal_the_serial_ones_on_one_and_three_ranks",
        &[1, 3],
        |comm| {
            let [_, cook] = aggregation_meshes(comm);
            let spec = BoxSpec::new([20, 15, 12], [0.0; 3], [4.0, 3.0, 2.0], CellKind::Hex8);
            let large = (
                mesh::generate_box(&spec).unwrap(),
                mesh::generate_box_part(&spec, comm.rank(), comm.size()).unwrap(),
            );
            check_strength_graph_and_aggregates(comm, &[large, cook]);
        },
    );
}

/// On one GPU per rank (2 ranks sharing the node's GPUs): a device operator's distributed
/// strength graph made on the GPUs (`dist_strength_graph_on_device`) has the host distributed
/// graph's rows (edges in the same order, weights bit for bit, the same serial ids of owned and
/// ghost vertices), and its aggregation there (`dist_aggregate_on_device`, MIS-1 and MIS-2,
/// with and without small aggregates to merge) gives the host's labels, on the box's slabs, the
/// Cook membrane's METIS parts and a larger box.
#[test]
fn a_device_strength_graph_and_aggregates_on_ranks_equal_the_host_ones() {
    use amg::aggregation::MisDistance;
    use amg::dist_aggregation::{
        dist_aggregate, dist_aggregate_on_device, dist_strength_graph,
        dist_strength_graph_on_device,
    };
    use linalg::dist::{select_rank_devices, skip_multi_rank_gpu_test, RankDeviceRequest};

    let test = "a_device_strength_graph_and_aggregates_on_ranks_equal_the_host_ones";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        let device = select_rank_devices(comm, RankDeviceRequest::Cuda)
            .unwrap()
            .device;
        let spec = BoxSpec::new([24, 18, 14], [0.0; 3], [4.0, 3.0, 2.0], CellKind::Hex8);
        let large = (
            mesh::generate_box(&spec).unwrap(),
            mesh::generate_box_part(&spec, comm.rank(), comm.size()).unwrap(),
        );
        let [slabs, cook] = aggregation_meshes(comm);
        let mut merged = 0;
        for (name, (_, part)) in [("slabs", slabs), ("cook", cook), ("large box", large)] {
            let (a, n_owned) = part_operator(comm, &part);
            let a_dev = a.to_device(&device).unwrap();
            let ids = &part.node_serial_ids[..n_owned];
            for threshold in [0.0, 0.08] {
                let case = format!("{name}, threshold {threshold}");
                let host = dist_strength_graph(&a, threshold, ids).unwrap();
                let dev_ids = linalg::dist::DeviceSerialIds::new(&a_dev, ids).unwrap();
                let mut dev = dist_strength_graph_on_device(&a_dev, threshold, &dev_ids).unwrap();
                assert!(linalg::dist::DeviceSerialIds::serve(Some(&dev_ids), &a_dev, ids).unwrap());
                assert_eq!(dev.serial_ids(), &host.serial_ids[..], "{case}: serial ids");
                assert_eq!(dev.n_owned(), n_owned, "{case}");
                let edges = dev.download().unwrap();
                let bits = |w: &[f64]| w.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                for v in 0..n_owned {
                    let (lo, hi) = (edges.row_ptr[v], edges.row_ptr[v + 1]);
                    assert_eq!(
                        &edges.col[lo..hi],
                        host.graph.neighbours(v),
                        "{case}: row {v}"
                    );
                    assert_eq!(
                        bits(&edges.weight[lo..hi]),
                        bits(host.graph.weights(v)),
                        "{case}: row {v}"
                    );
                }
                assert_eq!(dev.n_edges(), host.graph.n_edges(), "{case}: edges");
                for distance in [MisDistance::One, MisDistance::Two] {
                    for (bs, min_dofs) in [(3, 6), (1, 1), (1, 12), (1, 30)] {
                        let want = dist_aggregate(&host, distance, bs, min_dofs).unwrap();
                        let got =
                            dist_aggregate_on_device(&mut dev, distance, bs, min_dofs).unwrap();
                        assert_eq!(got, want, "{case}, {distance:?}, bs {bs}, min {min_dofs}");
                        let plain = dist_aggregate(&host, distance, 1, 1).unwrap();
                        merged += usize::from(plain != want);
                    }
                }
            }
        }
        // the merging of small aggregates ran on the device's labels too
        assert!(merged > 0, "no case merged small aggregates");
        eprintln!("device distributed aggregation: {merged} cases with merged small aggregates");
    });
}

/// Collective: every coarse vertex's serial coarse id by its coarse global id, from every
/// rank's part of `t`.
fn coarse_serial_of(
    comm: &Arc<dyn Comm>,
    t: &amg::dist_tentative::DistTentative,
) -> std::collections::HashMap<u64, u64> {
    let first = t.coarse_partition.owned_range().start;
    let mine: Vec<u64> = t
        .coarse_serial_ids
        .iter()
        .enumerate()
        .flat_map(|(c, &s)| [first + c as u64, s])
        .collect();
    let mut serial_of = std::collections::HashMap::new();
    for pairs in comm.allgatherv_u64(&mine).unwrap() {
        for p in pairs.chunks(2) {
            serial_of.insert(p[0], p[1]);
        }
    }
    serial_of
}

#[test]
fn distributed_tentative_prolongator_equals_the_serial_one() {
    use amg::aggregation::{aggregate, MisDistance};
    use amg::dist_aggregation::{dist_aggregate, dist_strength_graph};
    use amg::dist_tentative::dist_tentative_prolongator;

    on_ranks(
        "distributed_tentative_prolongator_equals_the_serial_one",
        &[2, 4],
        |comm| {
            let cases = aggregation_meshes(comm);
            for (serial, part) in &cases {
                let ids: Vec<u64> = (0..serial.n_nodes() as u64).collect();
                let whole = assemble(serial, &ids).tangent;
                let nns = assembly::rigid_body_modes(&serial.coords);
                let (k, bs) = (6, 3);
                let nns_space =
                    amg::NearNullSpace::from_row_major(3 * serial.n_nodes(), k, nns.clone())
                        .unwrap();
                let local = assemble(&part.mesh, &part.node_serial_ids);
                let n_owned = part.n_owned_nodes();
                let fine = RowPartition::new(comm.clone(), n_owned).unwrap();
                let pattern = DistPattern::from_local(
                    fine.clone(),
                    local.tangent.pattern(),
                    &part.node_globals,
                    3,
                )
                .unwrap();
                let mut a = DistBsr::zeros(pattern);
                a.set_from_local(&local.tangent).unwrap();
                for distance in [MisDistance::One, MisDistance::Two] {
                    let g_serial = amg::strength_graph(&whole, 0.0).unwrap();
                    let aggs = aggregate(&g_serial, distance, bs, k);
                    let (p0, coarse) =
                        amg::tentative::tentative_prolongator(&aggs, &nns_space, bs).unwrap();

                    let g = dist_strength_graph(&a, 0.0, &part.node_serial_ids[..n_owned]).unwrap();
                    let labels = dist_aggregate(&g, distance, bs, k).unwrap();
                    let slab = bs * k;
                    let owned_nns: Vec<f64> = part.node_serial_ids[..n_owned]
                        .iter()
                        .flat_map(|&s| {
                            nns[s as usize * slab..(s as usize + 1) * slab]
                                .iter()
                                .copied()
                        })
                        .collect();
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    // `t` made of owned vertices of serial ids `owned_serial`: the serial rows
                    // and coarse near-null rows, bit for bit
                    let check = |t: &amg::dist_tentative::DistTentative, owned_serial: &[u64]| {
                        let first = t.coarse_partition.owned_range().start;
                        let serial_of = coarse_serial_of(comm, t);
                        assert_eq!(serial_of.len(), aggs.n_aggregates());
                        // Fine rows: the same block, bit for bit, at the same (serial) coarse
                        // column.
                        let (diag, offd) = (t.p.diag(), t.p.offd());
                        let ghosts = t.p.pattern().halo().ghosts();
                        for (v, &s) in owned_serial.iter().enumerate() {
                            let s = s as usize;
                            let want = p0.pattern().row(s);
                            let (dr, or) = (diag.pattern().row(v), offd.pattern().row(v));
                            assert_eq!(dr.len() + or.len(), want.len(), "row {s}");
                            if want.is_empty() {
                                continue;
                            }
                            let (c, block) = if dr.len() == 1 {
                                (
                                    first + u64::from(dr[0]),
                                    diag.host_block(diag.pattern().row_ptr()[v]).unwrap(),
                                )
                            } else {
                                (
                                    ghosts[or[0] as usize],
                                    offd.host_block(offd.pattern().row_ptr()[v]).unwrap(),
                                )
                            };
                            assert_eq!(serial_of[&c], u64::from(want[0]), "row {s}");
                            assert_eq!(
                                bits(block),
                                bits(p0.host_block(p0.pattern().row_ptr()[s]).unwrap())
                            );
                        }
                        // Coarse near-null rows (R of each aggregate's QR), bit for bit.
                        for (c, &sc) in t.coarse_serial_ids.iter().enumerate() {
                            let sc = sc as usize;
                            assert_eq!(
                                bits(&t.coarse_nns.host().unwrap()[c * k * k..(c + 1) * k * k]),
                                bits(&coarse.row_major().unwrap()[sc * k * k..(sc + 1) * k * k])
                            );
                        }
                    };
                    let t = dist_tentative_prolongator(
                        &g.serial_ids,
                        &labels,
                        &owned_nns,
                        bs,
                        k,
                        &fine,
                    )
                    .unwrap();
                    check(&t, &g.serial_ids[..n_owned]);
                    // the plan alone (labels and serial ids travel, no rows), then its numeric
                    // phase (the rows' two all-to-alls): the same bits
                    let plan = amg::dist_tentative::dist_tentative_plan(
                        &g.serial_ids,
                        &labels,
                        bs,
                        k,
                        &fine,
                    )
                    .unwrap();
                    check(&plan.numeric(&owned_nns).unwrap(), &g.serial_ids[..n_owned]);
                    // the owned vertices numbered against their serial order (an owner then
                    // orders each aggregate's own members by serial id): the serial rows still
                    let reversed: Vec<usize> = (0..n_owned).rev().collect();
                    let ids: Vec<u64> = reversed
                        .iter()
                        .map(|&v| g.serial_ids[v])
                        .chain(g.serial_ids[n_owned..].iter().copied())
                        .collect();
                    let labels: Vec<u32> = reversed.iter().map(|&v| labels[v]).collect();
                    let owned_nns: Vec<f64> = reversed
                        .iter()
                        .flat_map(|&v| owned_nns[v * slab..(v + 1) * slab].iter().copied())
                        .collect();
                    let t = dist_tentative_prolongator(&ids, &labels, &owned_nns, bs, k, &fine)
                        .unwrap();
                    check(&t, &ids[..n_owned]);
                }
            }
        },
    );
}

#[test]
fn off_process_prolongator_rows_are_gathered_once_per_change_of_p() {
    use amg::aggregation::MisDistance;
    use amg::dist_aggregation::{dist_aggregate, dist_strength_graph};
    use amg::dist_tentative::dist_tentative_prolongator;
    use linalg::dist::RowGatherPlan;

    on_ranks(
        "off_process_prolongator_rows_are_gathered_once_per_change_of_p",
        &[2, 4],
        |comm| {
            let spec = BoxSpec::new([8, 3, 3], [0.0; 3], [3.0, 1.0, 1.0], CellKind::Hex8);
            let serial = mesh::generate_box(&spec).unwrap();
            let part = mesh::generate_box_part(&spec, comm.rank(), comm.size()).unwrap();
            let nns = assembly::rigid_body_modes(&serial.coords);
            let (bs, k, slab) = (3, 6, 18);
            let local = assemble(&part.mesh, &part.node_serial_ids);
            let n_owned = part.n_owned_nodes();
            let fine = RowPartition::new(comm.clone(), n_owned).unwrap();
            let pattern = DistPattern::from_local(
                fine.clone(),
                local.tangent.pattern(),
                &part.node_globals,
                3,
            )
            .unwrap();
            let mut a = DistBsr::zeros(pattern);
            a.set_from_local(&local.tangent).unwrap();
            let g = dist_strength_graph(&a, 0.0, &part.node_serial_ids[..n_owned]).unwrap();
            let labels = dist_aggregate(&g, MisDistance::One, bs, k).unwrap();
            let owned_nns: Vec<f64> = part.node_serial_ids[..n_owned]
                .iter()
                .flat_map(|&s| {
                    nns[s as usize * slab..(s as usize + 1) * slab]
                        .iter()
                        .copied()
                })
                .collect();
            let mut t =
                dist_tentative_prolongator(&g.serial_ids, &labels, &owned_nns, bs, k, &fine)
                    .unwrap();

            // P's rows of A's ghost columns: (global coarse column, block) of the owners' rows.
            let halo = a.pattern().halo();
            let plan = RowGatherPlan::new(halo, &t.p).unwrap();
            let mut rows = plan.new_matrix();
            let total = |v: usize| {
                let mut s = [v as f64];
                comm.allreduce_sum(&mut s).unwrap();
                s[0]
            };
            let sent = plan.update(&t.p, &mut rows).unwrap();
            assert!(total(sent) > 0.0);
            // Every owned P row as (fine global, coarse global, block), gathered on every rank.
            let p_first = t.p.pattern().col_partition().owned_range().start;
            let p_ghosts = t.p.pattern().halo().ghosts().to_vec();
            let row_blocks = |p: &DistBsr| -> Vec<f64> {
                let mut out = Vec::new();
                for v in 0..n_owned {
                    let (d, o) = (p.diag(), p.offd());
                    for (m, cols, base) in [(d, None, p_first), (o, Some(&p_ghosts), 0)] {
                        let pat = m.pattern();
                        for kk in pat.row_ptr()[v]..pat.row_ptr()[v + 1] {
                            let c = pat.col_idx()[kk] as u64;
                            let col = cols.map_or(base + c, |gh| gh[c as usize]);
                            out.extend([(fine.owned_range().start + v as u64) as f64, col as f64]);
                            out.extend_from_slice(m.host_block(kk).unwrap());
                        }
                    }
                }
                out
            };
            let check = |p: &DistBsr, rows: &Bsr| {
                let mut owners = std::collections::HashMap::new();
                for msg in comm.allgatherv_f64(&row_blocks(p)).unwrap() {
                    for rec in msg.chunks(2 + slab) {
                        owners.insert((rec[0] as u64, rec[1] as u64), rec[2..].to_vec());
                    }
                }
                let mut n_blocks = 0;
                for (j, &gid) in halo.ghosts().iter().enumerate() {
                    let pat = rows.pattern();
                    for kk in pat.row_ptr()[j]..pat.row_ptr()[j + 1] {
                        let col = plan.col_globals()[pat.col_idx()[kk] as usize];
                        let want = &owners[&(gid, col)];
                        assert_eq!(rows.host_block(kk).unwrap(), &want[..]);
                        n_blocks += 1;
                    }
                    let in_p = owners.keys().filter(|(r, _)| *r == gid).count();
                    assert_eq!(pat.row(j).len(), in_p, "ghost row {gid}: every block");
                }
                n_blocks
            };
            assert!(total(check(&t.p, &rows)) > 0.0);
            // A hot update with the same P sends nothing, on any rank.
            assert_eq!(total(plan.update(&t.p, &mut rows).unwrap()), 0.0);
            // New values: gathered again.
            let mut values = Vec::new();
            for v in 0..n_owned {
                for m in [t.p.diag(), t.p.offd()] {
                    let pat = m.pattern();
                    for kk in pat.row_ptr()[v]..pat.row_ptr()[v + 1] {
                        values.extend(m.host_block(kk).unwrap().iter().map(|x| 2.0 * x));
                    }
                }
            }
            t.p.set_values(&values).unwrap();
            assert_eq!(total(plan.update(&t.p, &mut rows).unwrap()), total(sent));
            check(&t.p, &rows);
            // rows of another pattern on one rank: an error on every rank (none waits for it)
            let mut wrong = if comm.rank() == 0 {
                let one = linalg::BlockPattern::new(1, 1, vec![0, 1], vec![0]).unwrap();
                Bsr::zeros(Arc::new(one), bs, k)
            } else {
                plan.new_matrix()
            };
            assert!(plan.update(&t.p, &mut wrong).is_err());
        },
    );
}

/// What the distributed Galerkin tests start from, for one mesh on the ranks of a test: the
/// serial operator (`whole`, nodes numbered by `ids`) and its smoothed prolongator `p`; this
/// rank's part, its local tangent and the distributed operator `a` on `pattern`; the
/// distributed strength graph, tentative prolongator `t` and smoothed prolongator `pd`; the
/// first owned coarse global id and the serial id of every coarse global id.
struct GalerkinCase {
    ids: Vec<u64>,
    part: MeshPart,
    local: Assembled,
    pattern: Arc<DistPattern>,
    whole: Bsr,
    p: Bsr,
    a: DistBsr,
    g: amg::dist_aggregation::DistGraph,
    t: amg::dist_tentative::DistTentative,
    pd: DistBsr,
    first: u64,
    serial_of: std::collections::HashMap<u64, u64>,
}

/// Collective: the [`GalerkinCase`]s of the [`aggregation_meshes`], smoothed with omega 0.6
/// after MIS-1 aggregation.
fn galerkin_cases(comm: &Arc<dyn Comm>) -> Vec<GalerkinCase> {
    use amg::aggregation::{aggregate, MisDistance};
    use amg::dist_aggregation::{dist_aggregate, dist_strength_graph};
    use amg::dist_prolongator::dist_smooth_prolongator;
    use amg::dist_tentative::dist_tentative_prolongator;

    let cases = aggregation_meshes(comm);
    let (bs, k, slab, omega) = (3, 6, 18, 0.6);
    cases
        .into_iter()
        .map(|(serial, part)| {
            let ids: Vec<u64> = (0..serial.n_nodes() as u64).collect();
            let whole = assemble(&serial, &ids).tangent;
            let nns = assembly::rigid_body_modes(&serial.coords);
            let space =
                amg::NearNullSpace::from_row_major(3 * serial.n_nodes(), k, nns.clone()).unwrap();
            let g_serial = amg::strength_graph(&whole, 0.0).unwrap();
            let aggs = aggregate(&g_serial, MisDistance::One, bs, k);
            let (p0, _) = amg::tentative::tentative_prolongator(&aggs, &space, bs).unwrap();
            let pbj = amg::PointBlockJacobi::new(&whole).unwrap();
            let p = amg::prolongator::smooth_prolongator(&whole, &pbj, &p0, omega).unwrap();

            let local = assemble(&part.mesh, &part.node_serial_ids);
            let n_owned = part.n_owned_nodes();
            let fine = RowPartition::new(comm.clone(), n_owned).unwrap();
            let pattern = DistPattern::from_local(
                fine.clone(),
                local.tangent.pattern(),
                &part.node_globals,
                3,
            )
            .unwrap();
            let mut a = DistBsr::zeros(pattern.clone());
            a.set_from_local(&local.tangent).unwrap();
            let g = dist_strength_graph(&a, 0.0, &part.node_serial_ids[..n_owned]).unwrap();
            let labels = dist_aggregate(&g, MisDistance::One, bs, k).unwrap();
            let owned_nns: Vec<f64> = part.node_serial_ids[..n_owned]
                .iter()
                .flat_map(|&s| {
                    nns[s as usize * slab..(s as usize + 1) * slab]
                        .iter()
                        .copied()
                })
                .collect();
            let t = dist_tentative_prolongator(&g.serial_ids, &labels, &owned_nns, bs, k, &fine)
                .unwrap();
            let dpbj = amg::PointBlockJacobi::new(a.diag()).unwrap();
            let pd = dist_smooth_prolongator(&a, &g.serial_ids, &t, &dpbj, omega).unwrap();
            let first = t.coarse_partition.owned_range().start;
            let serial_of = coarse_serial_of(comm, &t);
            GalerkinCase {
                ids,
                part,
                local,
                pattern,
                whole,
                p,
                a,
                g,
                t,
                pd,
                first,
                serial_of,
            }
        })
        .collect()
}

#[test]
fn distributed_smoothed_prolongator_and_galerkin_product_equal_the_serial_ones() {
    on_ranks(
        "distributed_smoothed_prolongator_and_galerkin_product_equal_the_serial_ones",
        &[2, 4],
        |comm| {
            for case in galerkin_cases(comm) {
                let GalerkinCase {
                    part,
                    whole,
                    p,
                    a,
                    g,
                    t,
                    pd,
                    first,
                    serial_of,
                    ..
                } = case;
                let n_owned = part.n_owned_nodes();
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let ghosts = pd.pattern().halo().ghosts();
                let mut n_blocks = 0;
                for v in 0..n_owned {
                    let s = part.node_serial_ids[v] as usize;
                    let mut got: Vec<(u64, Vec<u64>)> = Vec::new();
                    for (m, gh) in [(pd.diag(), None), (pd.offd(), Some(ghosts))] {
                        let pat = m.pattern();
                        for kk in pat.row_ptr()[v]..pat.row_ptr()[v + 1] {
                            let c = u64::from(pat.col_idx()[kk]);
                            let gc = gh.map_or(first + c, |gh: &[u64]| gh[c as usize]);
                            got.push((serial_of[&gc], bits(m.host_block(kk).unwrap())));
                        }
                    }
                    got.sort_unstable();
                    let pat = p.pattern();
                    let want: Vec<(u64, Vec<u64>)> = (pat.row_ptr()[s]..pat.row_ptr()[s + 1])
                        .map(|kk| {
                            (
                                u64::from(pat.col_idx()[kk]),
                                bits(p.host_block(kk).unwrap()),
                            )
                        })
                        .collect();
                    assert_eq!(got, want, "row {s}");
                    n_blocks += got.len();
                }
                assert!(n_blocks > n_owned, "smoothing widens the rows");

                // The Galerkin product: the serial one to rounding, row by row (serial coarse ids).
                let ac_serial = linalg::ptap(&whole, &p).unwrap();
                let ac = amg::dist_prolongator::dist_galerkin(
                    &a,
                    &g.serial_ids,
                    &pd,
                    &t.coarse_serial_ids,
                )
                .unwrap();
                check_coarse_rows(&ac, &t.coarse_serial_ids, &serial_of, &ac_serial, 1e-13);
            }
        },
    );
}

/// `a`'s blocks scaled by `1 + amplitude u(s_i, s_j)` (`u` hashed from the serial ids of the
/// block's row and column nodes, symmetric in them; `serial_ids` of `a`'s local nodes): new
/// values on the same pattern, the same on every rank count.
fn perturbed(a: &Bsr, serial_ids: &[u64], seed: u64, amplitude: f64) -> Bsr {
    let mut b = a.clone();
    let pattern = b.pattern().clone();
    for i in 0..pattern.n_block_rows() {
        for (slot, &j) in (pattern.row_ptr()[i]..).zip(pattern.row(i)) {
            let (si, sj) = (serial_ids[i], serial_ids[j as usize]);
            let h = splitmix64(seed ^ (si.min(sj) << 24) ^ si.max(sj));
            let f = 1.0 + amplitude * signed_unit(h);
            b.host_block_mut(slot)
                .unwrap()
                .iter_mut()
                .for_each(|v| *v *= f);
        }
    }
    b
}

/// `S a S` with `S` a positive diagonal scaling of each node's block row and column (factor
/// `1 + amplitude u(serial id)`, `u` in [-1, 1] hashed from `seed`): new values in every block,
/// and still symmetric positive definite when `a` is (a congruence), so CG converges on it.
fn congruence_scaled(a: &Bsr, serial_ids: &[u64], seed: u64, amplitude: f64) -> Bsr {
    let mut b = a.clone();
    let pattern = b.pattern().clone();
    let s = |id: u64| 1.0 + amplitude * signed_unit(splitmix64(seed ^ (id << 20) ^ 0x5eed));
    for i in 0..pattern.n_block_rows() {
        for (slot, &j) in (pattern.row_ptr()[i]..).zip(pattern.row(i)) {
            let f = s(serial_ids[i]) * s(serial_ids[j as usize]);
            b.host_block_mut(slot)
                .unwrap()
                .iter_mut()
                .for_each(|v| *v *= f);
        }
    }
    b
}

/// The bits of both parts of a distributed matrix, with its parts' patterns and ghosts.
type DistBits = (Vec<u64>, Vec<u64>, Vec<u32>, Vec<u32>, Vec<u64>);

fn dist_bits(m: &DistBsr) -> DistBits {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    (
        bits(m.diag().host().unwrap()),
        bits(m.offd().host().unwrap()),
        m.diag().pattern().col_idx().to_vec(),
        m.offd().pattern().col_idx().to_vec(),
        m.pattern().halo().ghosts().to_vec(),
    )
}

/// Checks the owned coarse rows of `ac` (global coarse ids, `serial_of`: global -> serial
/// coarse id; `coarse_serial_ids` of the owned rows) against the serial product `ac_serial`,
/// entry by entry to `rtol` of its largest entry; returns the blocks checked.
fn check_coarse_rows(
    ac: &DistBsr,
    coarse_serial_ids: &[u64],
    serial_of: &std::collections::HashMap<u64, u64>,
    ac_serial: &Bsr,
    rtol: f64,
) -> usize {
    let scale = ac_serial
        .host()
        .unwrap()
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let first = ac.pattern().partition().owned_range().start;
    let cg = ac.pattern().halo().ghosts();
    let mut n = 0;
    for (c, &sc) in coarse_serial_ids.iter().enumerate() {
        let sc = sc as usize;
        let mut got: Vec<(u64, Vec<f64>)> = Vec::new();
        for (m, gh) in [(ac.diag(), None), (ac.offd(), Some(cg))] {
            let pat = m.pattern();
            for kk in pat.row_ptr()[c]..pat.row_ptr()[c + 1] {
                let col = u64::from(pat.col_idx()[kk]);
                let gc = gh.map_or(first + col, |gh: &[u64]| gh[col as usize]);
                got.push((serial_of[&gc], m.host_block(kk).unwrap().to_vec()));
            }
        }
        got.sort_by_key(|(col, _)| *col);
        let pat = ac_serial.pattern();
        let cols: Vec<u64> = pat.row(sc).iter().map(|&x| u64::from(x)).collect();
        assert_eq!(
            got.iter().map(|(col, _)| *col).collect::<Vec<_>>(),
            cols,
            "coarse row {sc}"
        );
        for (i, kk) in (pat.row_ptr()[sc]..pat.row_ptr()[sc + 1]).enumerate() {
            for (x, y) in got[i].1.iter().zip(ac_serial.host_block(kk).unwrap()) {
                assert!((x - y).abs() <= rtol * scale, "coarse row {sc}: {x} vs {y}");
            }
        }
        n += got.len();
    }
    n
}

/// The planned distributed Galerkin product (symbolic once, numeric per hot update) has the
/// one-off product's bits ([`amg::dist_prolongator::GalerkinPlan::product_reference`]: the
/// symbolic products, the sorted local `A` and the reduction's indices made per call) on 1, 2,
/// 3 and 4 ranks, equals the serial `P^T A P` to 1e-12 of its largest entry, and repeated hot
/// updates with new values of `A` give a fresh plan's bits on the same coarse pattern object.
/// The planned product sums through the `SplitReduction` index lists the GPU copy uploads, so
/// this checks those lists on ranks without a GPU.
#[test]
fn the_planned_distributed_galerkin_product_equals_the_one_off_and_the_serial_products() {
    use amg::dist_prolongator::GalerkinPlan;

    on_ranks(
        "the_planned_distributed_galerkin_product_equals_the_one_off_and_the_serial_products",
        &[1, 2, 3, 4],
        |comm| {
            for case in galerkin_cases(comm) {
                let GalerkinCase {
                    ids,
                    part,
                    local,
                    pattern,
                    whole,
                    p,
                    a,
                    g,
                    t,
                    pd,
                    serial_of,
                    ..
                } = case;
                let operator = |values: &Bsr| {
                    let mut a = DistBsr::zeros(pattern.clone());
                    a.set_from_local(values).unwrap();
                    a
                };
                let mut plan =
                    GalerkinPlan::new(&a, &g.serial_ids, &pd, &t.coarse_serial_ids).unwrap();
                let (reference, _) = plan.product_reference(&a, &pd).unwrap();
                let (ac, sent) = plan.product(&a, &pd).unwrap();
                assert_eq!(sent, 0, "P values sent for an unchanged P");
                assert_eq!(dist_bits(&ac), dist_bits(&reference), "cold product");
                let ac_serial = linalg::ptap(&whole, &p).unwrap();
                let n = check_coarse_rows(&ac, &t.coarse_serial_ids, &serial_of, &ac_serial, 1e-12);
                let mut total = [n as f64];
                comm.allreduce_sum(&mut total).unwrap();
                assert_eq!(
                    total[0] as usize,
                    ac_serial.pattern().nnz(),
                    "coarse blocks"
                );
                if comm.size() > 1 {
                    let mut sent_bytes = [plan.last_sent_bytes() as f64];
                    comm.allreduce_sum(&mut sent_bytes).unwrap();
                    assert!(
                        sent_bytes[0] > 0.0,
                        "partial coarse rows sent to their owners"
                    );
                }

                // Hot updates: new values of A, the same P and plan.
                for seed in [7u64, 8, 9] {
                    let values = perturbed(&local.tangent, &part.node_serial_ids, seed, 0.25);
                    let a2 = operator(&values);
                    let (hot, _) = plan.product(&a2, &pd).unwrap();
                    assert!(
                        std::sync::Arc::ptr_eq(hot.pattern(), ac.pattern()),
                        "the coarse pattern object is kept between hot updates"
                    );
                    let mut fresh =
                        GalerkinPlan::new(&a2, &g.serial_ids, &pd, &t.coarse_serial_ids).unwrap();
                    let (fresh_ac, _) = fresh.product(&a2, &pd).unwrap();
                    assert_eq!(dist_bits(&hot), dist_bits(&fresh_ac), "hot update {seed}");
                    let (reference, _) = fresh.product_reference(&a2, &pd).unwrap();
                    assert_eq!(dist_bits(&hot), dist_bits(&reference), "hot update {seed}");
                    let whole2 = perturbed(&whole, &ids, seed, 0.25);
                    let serial2 = linalg::ptap(&whole2, &p).unwrap();
                    check_coarse_rows(&hot, &t.coarse_serial_ids, &serial_of, &serial2, 1e-12);
                }
            }
        },
    );
}

/// The local linear-elastic stiffness of `mesh` with the nodes of `x = 0` clamped by symmetric
/// elimination (their rows and columns zero, identity diagonal blocks), and the clamped flags.
fn clamped_stiffness(mesh: &HexMesh) -> (Bsr, Vec<bool>) {
    let mut k = shifted_stiffness(mesh, 0.0);
    let mut clamped = vec![false; mesh.n_nodes()];
    for &n in &mesh.node_sets["xmin"] {
        clamped[n] = true;
    }
    let pattern = k.pattern().clone();
    for i in 0..pattern.n_block_rows() {
        for (slot, &j) in (pattern.row_ptr()[i]..).zip(pattern.row(i)) {
            if clamped[i] || clamped[j as usize] {
                let b = k.host_block_mut(slot).unwrap();
                b.fill(0.0);
                if i == j as usize {
                    b[0] = 1.0;
                    b[4] = 1.0;
                    b[8] = 1.0;
                }
            }
        }
    }
    (k, clamped)
}

/// CG with the distributed two-level AMG on the clamped box, on the ranks of `comm` with the
/// mesh part `part`: iterations, and the owned solution entries as (serial dof, value).
fn two_level_solve(
    comm: &Arc<dyn Comm>,
    serial: &HexMesh,
    part: &MeshPart,
    preconditioned: bool,
) -> (usize, Vec<(usize, f64)>) {
    use amg::aggregation::MisDistance;
    use amg::dist_aggregation::{dist_aggregate, dist_strength_graph};
    use amg::dist_cycle::DistTwoLevel;
    use amg::dist_prolongator::{dist_galerkin, dist_smooth_prolongator};
    use amg::dist_tentative::dist_tentative_prolongator;

    let (k_local, clamped) = clamped_stiffness(&part.mesh);
    let n_owned = part.n_owned_nodes();
    let fine = RowPartition::new(comm.clone(), n_owned).unwrap();
    let pattern =
        DistPattern::from_local(fine.clone(), k_local.pattern(), &part.node_globals, 3).unwrap();
    let mut a = DistBsr::zeros(pattern);
    a.set_from_local(&k_local).unwrap();
    let mut b = a.new_owned_vector();
    for (e, v) in b.host_mut().unwrap().iter_mut().enumerate() {
        let s = part.node_serial_ids[e / 3];
        *v = if clamped[e / 3] {
            0.0
        } else {
            signed_unit(splitmix64(3 * s + (e % 3) as u64 + 4242))
        };
    }
    let mut x = a.new_owned_vector();
    let params = amg::CgParams {
        rtol: 1e-8,
        ..Default::default()
    };
    let outcome = if preconditioned {
        let nns = assembly::rigid_body_modes(&serial.coords);
        let slab = 18;
        let g = dist_strength_graph(&a, 0.0, &part.node_serial_ids[..n_owned]).unwrap();
        let labels = dist_aggregate(&g, MisDistance::One, 3, 6).unwrap();
        let owned_nns: Vec<f64> = part.node_serial_ids[..n_owned]
            .iter()
            .flat_map(|&s| {
                nns[s as usize * slab..(s as usize + 1) * slab]
                    .iter()
                    .copied()
            })
            .collect();
        let t =
            dist_tentative_prolongator(&g.serial_ids, &labels, &owned_nns, 3, 6, &fine).unwrap();
        let pbj = amg::PointBlockJacobi::new(a.diag()).unwrap();
        let p = dist_smooth_prolongator(&a, &g.serial_ids, &t, &pbj, 0.6).unwrap();
        let ac = dist_galerkin(&a, &g.serial_ids, &p, &t.coarse_serial_ids).unwrap();
        let pre = DistTwoLevel::new(&a, &p, &ac, 0.5, 2).unwrap();
        amg::cg_operator(&a, &b, &mut x, &pre, &params).unwrap()
    } else {
        let pbj = amg::PointBlockJacobi::new(a.diag()).unwrap();
        amg::cg_operator(&a, &b, &mut x, &pbj, &params).unwrap()
    };
    assert!(outcome.converged, "{outcome:?}");
    let values = x.to_host_vec().unwrap();
    let owned = values
        .iter()
        .enumerate()
        .map(|(e, &v)| (3 * part.node_serial_ids[e / 3] as usize + e % 3, v))
        .collect();
    (outcome.iterations, owned)
}

#[test]
fn cg_with_the_distributed_two_level_amg_matches_one_rank() {
    on_ranks(
        "cg_with_the_distributed_two_level_amg_matches_one_rank",
        &[2, 4],
        |comm| {
            let spec = BoxSpec::new([12, 4, 4], [0.0; 3], [6.0, 1.0, 1.0], CellKind::Hex8);
            let serial = mesh::generate_box(&spec).unwrap();
            let whole = mesh::generate_box_part(&spec, 0, 1).unwrap();
            let (it_one, x_one) =
                two_level_solve(&linalg::comm::SelfComm::shared(), &serial, &whole, true);
            let part = mesh::generate_box_part(&spec, comm.rank(), comm.size()).unwrap();
            let (it, x) = two_level_solve(comm, &serial, &part, true);
            assert_eq!(it, it_one, "CG iterations with the two-level AMG");
            let reference: std::collections::HashMap<usize, f64> = x_one.into_iter().collect();
            let mut err = [0.0, 0.0];
            for (dof, v) in &x {
                err[0] += (v - reference[dof]).powi(2);
                err[1] += reference[dof].powi(2);
            }
            comm.allreduce_sum(&mut err).unwrap();
            assert!(
                err[0].sqrt() <= 1e-10 * err[1].sqrt(),
                "relative difference {}",
                (err[0] / err[1]).sqrt()
            );
            let (it_pbj, _) = two_level_solve(comm, &serial, &part, false);
            assert!(
                it * 2 < it_pbj,
                "AMG {it} iterations, point-block Jacobi {it_pbj}"
            );
            if comm.rank() == 0 {
                eprintln!(
                    "two-level AMG: {it} CG iterations on {} ranks (point-block Jacobi: {it_pbj})",
                    comm.size()
                );
            }
        },
    );
}

/// CG with the distributed multi-level hierarchy on the clamped box: iterations, levels
/// (unknowns per level) and the owned solution entries as (serial dof, value).
fn hierarchy_solve(
    comm: &Arc<dyn Comm>,
    serial: &HexMesh,
    part: &MeshPart,
    process_eq_limit: Option<usize>,
) -> HierarchySolve {
    use amg::dist_cycle::DistHierarchy;

    let (k_local, clamped) = clamped_stiffness(&part.mesh);
    let n_owned = part.n_owned_nodes();
    let fine = RowPartition::new(comm.clone(), n_owned).unwrap();
    let pattern = DistPattern::from_local(fine, k_local.pattern(), &part.node_globals, 3).unwrap();
    let mut a = DistBsr::zeros(pattern);
    a.set_from_local(&k_local).unwrap();
    let mut b = a.new_owned_vector();
    for (e, v) in b.host_mut().unwrap().iter_mut().enumerate() {
        let s = part.node_serial_ids[e / 3];
        *v = if clamped[e / 3] {
            0.0
        } else {
            signed_unit(splitmix64(3 * s + (e % 3) as u64 + 4242))
        };
    }
    let mut x = a.new_owned_vector();
    let nns = assembly::rigid_body_modes(&serial.coords);
    let owned_nns: Vec<f64> = part.node_serial_ids[..n_owned]
        .iter()
        .flat_map(|&s| nns[s as usize * 18..(s as usize + 1) * 18].iter().copied())
        .collect();
    let params = amg::AmgParams {
        coarse_eq_limit: 150,
        max_levels: 6,
        process_eq_limit,
        ..amg::AmgParams::default()
    };
    // The hierarchy owns its copy of the fine operator.
    let mut fine_level = DistBsr::zeros(a.pattern().clone());
    fine_level.set_from_local(&k_local).unwrap();
    let h = DistHierarchy::new(
        fine_level,
        &part.node_serial_ids[..n_owned],
        owned_nns,
        6,
        &params,
    )
    .unwrap();
    let outcome = amg::cg_operator(
        &a,
        &b,
        &mut x,
        &h,
        &amg::CgParams {
            rtol: 1e-8,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(outcome.converged, "{outcome:?}");
    let owned = x
        .to_host_vec()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(e, &v)| (3 * part.node_serial_ids[e / 3] as usize + e % 3, v))
        .collect();
    HierarchySolve {
        iterations: outcome.iterations,
        levels: h.level_unknowns(),
        ranks: h.level_ranks(),
        owned,
    }
}

/// What [`hierarchy_solve`] found.
struct HierarchySolve {
    iterations: usize,
    /// Global unknowns per level.
    levels: Vec<usize>,
    /// Ranks holding each level.
    ranks: Vec<usize>,
    /// The owned solution entries as (serial dof, value).
    owned: Vec<(usize, f64)>,
}

/// The relative 2-norm difference of the owned entries `x` from the serial solution (collective).
fn relative_to_serial(comm: &Arc<dyn Comm>, x: &[(usize, f64)], serial: &[f64]) -> f64 {
    let mut err = [0.0, 0.0];
    for (dof, v) in x {
        err[0] += (v - serial[*dof]).powi(2);
        err[1] += serial[*dof].powi(2);
    }
    comm.allreduce_sum(&mut err).unwrap();
    (err[0] / err[1]).sqrt()
}

/// The serial [`amg::Hierarchy`] with the options of [`hierarchy_solve`] on the serial mesh's
/// clamped box: CG iterations, unknowns per level, the solution (serial dofs).
fn serial_hierarchy_solve(serial: &HexMesh) -> (usize, Vec<usize>, Vec<f64>) {
    let (k, clamped) = clamped_stiffness(serial);
    let b: Vec<f64> = (0..k.n_rows())
        .map(|e| {
            if clamped[e / 3] {
                0.0
            } else {
                signed_unit(splitmix64(e as u64 + 4242))
            }
        })
        .collect();
    let b = Vector::from_vec(b);
    let nns = amg::NearNullSpace::from_row_major(
        k.n_rows(),
        6,
        assembly::rigid_body_modes(&serial.coords),
    )
    .unwrap();
    let params = amg::AmgParams {
        coarse_eq_limit: 150,
        max_levels: 6,
        ..amg::AmgParams::default()
    };
    let h = amg::Hierarchy::setup(&k, &nns, &params).unwrap();
    let mut x = Vector::zeros(k.n_rows());
    let outcome = amg::cg(
        &k,
        &b,
        &mut x,
        &h,
        &amg::CgParams {
            rtol: 1e-8,
            ..Default::default()
        },
    )
    .unwrap();
    let levels = h.report().levels.iter().map(|l| l.rows).collect();
    (outcome.iterations, levels, x.to_host_vec().unwrap())
}

#[test]
fn cg_with_the_distributed_amg_hierarchy_matches_one_rank() {
    on_ranks(
        "cg_with_the_distributed_amg_hierarchy_matches_one_rank",
        &[2, 4, 8],
        |comm| {
            let spec = BoxSpec::new([16, 6, 6], [0.0; 3], [8.0, 1.0, 1.0], CellKind::Hex8);
            let serial = mesh::generate_box(&spec).unwrap();
            let whole = mesh::generate_box_part(&spec, 0, 1).unwrap();
            let one = hierarchy_solve(&linalg::comm::SelfComm::shared(), &serial, &whole, None);
            let part = if comm.size() == 8 {
                // 2 x 2 x 2 boxes: corner neighbours (this beam's own grid is 4 x 1 x 2)
                let grid = mesh::BoxRankGrid::with_ranks(spec.node_counts(), [2, 2, 2]).unwrap();
                mesh::generate_box_part_on(&spec, comm.rank(), &grid).unwrap()
            } else {
                mesh::generate_box_part(&spec, comm.rank(), comm.size()).unwrap()
            };
            let HierarchySolve {
                iterations: it,
                levels,
                ranks,
                owned: x,
            } = hierarchy_solve(comm, &serial, &part, None);
            assert!(levels.len() >= 3, "levels {levels:?}");
            assert_eq!(levels, one.levels, "the same hierarchy");
            assert_eq!(it, one.iterations, "CG iterations");
            // PETSc's 50 unknowns per rank
            let expected = expected_level_ranks(&levels, 50, comm.size());
            assert_eq!(ranks, expected, "ranks per level");
            // ... and the serial hierarchy's (Chebyshev smoothing, the same eigenvalue estimates)
            let (it_serial, levels_serial, x_serial) = serial_hierarchy_solve(&serial);
            assert_eq!(levels, levels_serial, "the serial hierarchy");
            assert_eq!(it, it_serial, "the serial CG iterations");
            let serial_difference = relative_to_serial(comm, &x, &x_serial);
            assert!(serial_difference <= 1e-10, "{serial_difference:e}");
            let mut x_one = vec![0.0; x_serial.len()];
            for (dof, v) in one.owned {
                x_one[dof] = v;
            }
            let one_rank_difference = relative_to_serial(comm, &x, &x_one);
            assert!(
                one_rank_difference <= 1e-10,
                "relative difference {one_rank_difference:e}"
            );
            if comm.rank() == 0 {
                eprintln!(
                    "AMG hierarchy {levels:?}: {it} CG iterations on {} ranks",
                    comm.size()
                );
            }
        },
    );
}

/// The ranks holding each level of a hierarchy with these unknowns per level on `size` ranks:
/// `max(1, unknowns / limit)`, never more than hold the finer level.
fn expected_level_ranks(levels: &[usize], limit: usize, size: usize) -> Vec<usize> {
    let mut ranks = vec![size];
    for &n in &levels[1..] {
        let above = *ranks.last().unwrap();
        ranks.push((n / limit).clamp(1, above));
    }
    ranks
}

/// `process_eq_limit` gathers the small coarse levels onto fewer ranks (the first ones): the
/// levels, CG iterations and solution are still the serial hierarchy's, and each level is held
/// by `max(1, unknowns / limit)` ranks, never more than hold the finer level.
#[test]
fn small_coarse_levels_gathered_onto_fewer_ranks_keep_the_serial_hierarchy() {
    on_ranks(
        "small_coarse_levels_gathered_onto_fewer_ranks_keep_the_serial_hierarchy",
        &[2, 3, 4],
        |comm| {
            let spec = BoxSpec::new([16, 6, 6], [0.0; 3], [8.0, 1.0, 1.0], CellKind::Hex8);
            let serial = mesh::generate_box(&spec).unwrap();
            let part = mesh::generate_box_part(&spec, comm.rank(), comm.size()).unwrap();
            let (it_serial, levels_serial, x_serial) = serial_hierarchy_solve(&serial);
            for limit in [100, 400, 100_000] {
                let h = hierarchy_solve(comm, &serial, &part, Some(limit));
                let expected = expected_level_ranks(&h.levels, limit, comm.size());
                assert_eq!(
                    h.ranks, expected,
                    "limit {limit}: ranks per level {:?}",
                    h.levels
                );
                assert!(h.ranks.contains(&1), "limit {limit}: {:?}", h.ranks);
                assert_eq!(
                    h.levels, levels_serial,
                    "limit {limit}: the serial hierarchy"
                );
                assert_eq!(
                    h.iterations, it_serial,
                    "limit {limit}: the serial CG iterations"
                );
                let difference = relative_to_serial(comm, &h.owned, &x_serial);
                assert!(difference <= 1e-10, "limit {limit}: {difference:e}");
                if comm.rank() == 0 {
                    eprintln!(
                        "process_eq_limit {limit}: levels {:?} on {:?} ranks, {} CG iterations",
                        h.levels, h.ranks, h.iterations
                    );
                }
            }
        },
    );
}

/// The hot update of [`a_hot_update_of_the_distributed_hierarchy_sends_no_prolongator_values`]
/// with `process_eq_limit`.
fn hot_update_sends_no_prolongator_values(comm: &Arc<dyn Comm>, process_eq_limit: Option<usize>) {
    let (beam, mut h, b) = clamped_beam(comm, process_eq_limit, amg::Renewal::Recompute);
    let operator = |scale: f64| {
        let mut k = beam.k_local.clone();
        k.scale(scale).unwrap();
        beam.operator(&k)
    };
    let a = operator(1.0);
    let cg = amg::CgParams {
        rtol: 1e-8,
        ..Default::default()
    };
    let mut x1 = a.new_owned_vector();
    let first = amg::cg_operator(&a, &b, &mut x1, &h, &cg).unwrap();

    // The same structure, values doubled: a hot update moves no prolongator values.
    let sent = h.update(operator(2.0)).unwrap().messages.prolongator_values;
    let mut total = [sent as f64];
    comm.allreduce_sum(&mut total).unwrap();
    assert_eq!(total[0], 0.0, "P values sent by a hot update");
    let a2 = operator(2.0);
    let mut x2 = a2.new_owned_vector();
    let second = amg::cg_operator(&a2, &b, &mut x2, &h, &cg).unwrap();
    assert!(second.converged);
    // 2 A x2 = b: x2 = x1 / 2 (the hierarchy scaled as a whole, the same iterations).
    assert_eq!(second.iterations, first.iterations);
    let mut err = [0.0, 0.0];
    for (u, v) in x1.host().unwrap().iter().zip(x2.host().unwrap()) {
        err[0] += (u / 2.0 - v).powi(2);
        err[1] += (u / 2.0).powi(2);
    }
    comm.allreduce_sum(&mut err).unwrap();
    assert!(err[0].sqrt() <= 1e-8 * err[1].sqrt());
}

/// A hot update (new values, the same structure) sends no prolongator values and scales the
/// solution as it scales the operator; with every level on every rank and with the small
/// levels gathered onto fewer ranks.
#[test]
fn a_hot_update_of_the_distributed_hierarchy_sends_no_prolongator_values() {
    on_ranks(
        "a_hot_update_of_the_distributed_hierarchy_sends_no_prolongator_values",
        &[2, 4],
        |comm| {
            for process_eq_limit in [None, Some(100)] {
                hot_update_sends_no_prolongator_values(comm, process_eq_limit);
            }
        },
    );
}

/// Renewal on ranks (once serial-only): after a hot update, new rigid-body modes (those of a
/// rotated configuration) renew the distributed hierarchy to the values of a cold set-up with
/// them, bit for bit (every level's operator and eigenvalue estimate, the CG iterations and
/// solution), with every level on every rank and with small levels gathered onto fewer ranks;
/// the same with `renewal: keep_aggregates`, which keeps every level's aggregation (here the
/// one a cold set-up makes: doubled values aggregate alike).
#[test]
fn a_renewal_of_the_distributed_hierarchy_equals_a_cold_setup() {
    on_ranks(
        "a_renewal_of_the_distributed_hierarchy_equals_a_cold_setup",
        &[2, 3],
        |comm| {
            let cases = [None, Some(100)].into_iter().flat_map(|limit| {
                [amg::Renewal::Recompute, amg::Renewal::KeepAggregates].map(|r| (limit, r))
            });
            for (process_eq_limit, renewal_kind) in cases {
                let (beam, mut h, b) = clamped_beam(comm, process_eq_limit, renewal_kind);
                let n_owned = beam.part.n_owned_nodes();
                let ids = &beam.part.node_serial_ids[..n_owned];
                let mut k2 = beam.k_local.clone();
                k2.scale(2.0).unwrap();
                h.update(beam.operator(&k2)).unwrap();
                let before: Vec<DistBits> = (1..h.n_levels())
                    .map(|l| dist_bits(h.level_operator(l).unwrap()))
                    .collect();
                // the modes of the beam turned by 0.3 rad about x (kept aggregates: turned by
                // 0, so that a cold set-up aggregates as the kept ones; the turned modes are
                // checked after the loop's comparison)
                let turned_modes = |angle: f64| turned_beam_modes(ids, angle);
                let keep = renewal_kind == amg::Renewal::KeepAggregates;
                let owned_nns = turned_modes(if keep { 0.0 } else { 0.3 });
                let renewal = h
                    .set_near_null_space(beam.operator(&k2), owned_nns.clone())
                    .unwrap();
                match renewal_kind {
                    amg::Renewal::KeepAggregates => {
                        assert_eq!(renewal.plans_reused, h.n_levels() - 1)
                    }
                    // the fine level's graph is `k2`'s either way: its recomputed aggregates
                    // are the kept ones, so its plans stay
                    amg::Renewal::Recompute => assert!(
                        (1..h.n_levels()).contains(&renewal.plans_reused),
                        "{renewal:?}"
                    ),
                }
                assert_eq!(renewal.plans_reused + renewal.plans_built, h.n_levels() - 1);
                let cold = amg::dist_cycle::DistHierarchy::new(
                    beam.operator(&k2),
                    ids,
                    owned_nns,
                    6,
                    &beam.params,
                )
                .unwrap();
                assert_eq!(h.n_levels(), cold.n_levels());
                assert_eq!(h.level_ranks(), cold.level_ranks());
                for l in 0..h.n_levels() {
                    let (renewed, fresh) = (h.level_operator(l), cold.level_operator(l));
                    assert_eq!(
                        dist_bits(renewed.unwrap()),
                        dist_bits(fresh.unwrap()),
                        "level {l}"
                    );
                }
                let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(h.emax()), bits(cold.emax()), "eigenvalue estimates");
                // (a rank may hold no rows of a gathered coarse level)
                let mut changed = [f64::from(u8::from(
                    before[0] != dist_bits(h.level_operator(1).unwrap()),
                ))];
                comm.allreduce_sum(&mut changed).unwrap();
                assert!(
                    keep || changed[0] > 0.0,
                    "the new modes change the coarse operator"
                );
                let a = beam.operator(&k2);
                let cg = amg::CgParams {
                    rtol: 1e-8,
                    ..Default::default()
                };
                let (mut x1, mut x2) = (a.new_owned_vector(), a.new_owned_vector());
                let renewed = amg::cg_operator(&a, &b, &mut x1, &h, &cg).unwrap();
                let fresh = amg::cg_operator(&a, &b, &mut x2, &cold, &cg).unwrap();
                assert!(renewed.converged, "{renewed:?}");
                assert_eq!(renewed.iterations, fresh.iterations);
                assert_eq!(
                    bits(x1.to_host_vec().unwrap()),
                    bits(x2.to_host_vec().unwrap())
                );
                if !keep {
                    // the same modes again: every level's recomputed aggregates are the kept
                    // ones, every plan stays, the values are still the cold set-up's
                    let again = h
                        .set_near_null_space(beam.operator(&k2), turned_modes(0.3))
                        .unwrap();
                    assert_eq!(again.plans_reused, h.n_levels() - 1, "{again:?}");
                    for l in 0..h.n_levels() {
                        let (renewed, fresh) = (h.level_operator(l), cold.level_operator(l));
                        assert_eq!(
                            dist_bits(renewed.unwrap()),
                            dist_bits(fresh.unwrap()),
                            "renewed twice: level {l}"
                        );
                    }
                    assert_eq!(bits(h.emax()), bits(cold.emax()), "renewed twice: emax");
                    let mut x3 = a.new_owned_vector();
                    let again = amg::cg_operator(&a, &b, &mut x3, &h, &cg).unwrap();
                    assert_eq!(again.iterations, fresh.iterations);
                    assert_eq!(
                        bits(x3.to_host_vec().unwrap()),
                        bits(x2.to_host_vec().unwrap())
                    );
                }
                if keep {
                    // turned modes, aggregates kept (the coarse ones differ from a cold
                    // set-up's here): about a cold set-up's iterations
                    let nns = turned_modes(0.3);
                    h.set_near_null_space(beam.operator(&k2), nns.clone())
                        .unwrap();
                    let cold = amg::dist_cycle::DistHierarchy::new(
                        beam.operator(&k2),
                        ids,
                        nns,
                        6,
                        &beam.params,
                    )
                    .unwrap();
                    let kept = amg::cg_operator(&a, &b, &mut x1, &h, &cg).unwrap();
                    let fresh = amg::cg_operator(&a, &b, &mut x2, &cold, &cg).unwrap();
                    assert!(kept.converged, "{kept:?}");
                    assert!(
                        kept.iterations <= fresh.iterations + 2,
                        "kept {} vs cold {}",
                        kept.iterations,
                        fresh.iterations
                    );
                }
            }
        },
    );
}

/// A renewal that keeps the aggregates keeps every plan on ranks (the tentative prolongator's
/// exchange, the smoothing's and the Galerkin product's symbolic phases, every pattern) and
/// makes only values: renewing with modes A and then modes B gives, bit for bit, the hierarchy
/// that renews with B straight away (the same kept aggregates), so nothing of A's values
/// survives; every level's pattern is the kept object; with and without `process_eq_limit`, on
/// 2, 3 and 4 ranks.
#[test]
fn a_kept_renewal_on_ranks_makes_only_values() {
    on_ranks(
        "a_kept_renewal_on_ranks_makes_only_values",
        &[2, 3, 4],
        |comm| {
            for process_eq_limit in [None, Some(100)] {
                let keep = amg::Renewal::KeepAggregates;
                let (beam, mut twice, b) = clamped_beam(comm, process_eq_limit, keep);
                let (_, mut once, _) = clamped_beam(comm, process_eq_limit, keep);
                let n_owned = beam.part.n_owned_nodes();
                let ids = &beam.part.node_serial_ids[..n_owned];
                let turned_modes = |angle: f64| turned_beam_modes(ids, angle);
                let mut k2 = beam.k_local.clone();
                k2.scale(1.5).unwrap();
                let patterns: Vec<_> = (1..twice.n_levels())
                    .map(|l| twice.level_operator(l).unwrap().pattern().clone())
                    .collect();
                let first = twice
                    .set_near_null_space(beam.operator(&k2), turned_modes(0.3))
                    .unwrap();
                assert_eq!(first.plans_reused, twice.n_levels() - 1);
                let before_b: Vec<DistBits> = (1..twice.n_levels())
                    .map(|l| dist_bits(twice.level_operator(l).unwrap()))
                    .collect();
                twice
                    .set_near_null_space(beam.operator(&k2), turned_modes(0.7))
                    .unwrap();
                once.set_near_null_space(beam.operator(&k2), turned_modes(0.7))
                    .unwrap();
                assert_eq!(twice.n_levels(), once.n_levels());
                for l in 1..twice.n_levels() {
                    let (t, o) = (
                        twice.level_operator(l).unwrap(),
                        once.level_operator(l).unwrap(),
                    );
                    assert!(
                        Arc::ptr_eq(t.pattern(), &patterns[l - 1]),
                        "level {l}: the kept pattern"
                    );
                    assert_eq!(dist_bits(t), dist_bits(o), "level {l}");
                }
                // (a rank may hold no rows of a gathered coarse level)
                let mut changed = [f64::from(u8::from(
                    before_b[0] != dist_bits(twice.level_operator(1).unwrap()),
                ))];
                comm.allreduce_sum(&mut changed).unwrap();
                assert!(changed[0] > 0.0, "modes B change the coarse operator");
                let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(twice.emax()), bits(once.emax()));
                let a = beam.operator(&k2);
                let cg = amg::CgParams {
                    rtol: 1e-8,
                    ..Default::default()
                };
                let (mut x1, mut x2) = (a.new_owned_vector(), a.new_owned_vector());
                let r1 = amg::cg_operator(&a, &b, &mut x1, &twice, &cg).unwrap();
                let r2 = amg::cg_operator(&a, &b, &mut x2, &once, &cg).unwrap();
                assert!(r1.converged, "{r1:?}");
                assert_eq!(r1.iterations, r2.iterations);
                assert_eq!(
                    bits(x1.to_host_vec().unwrap()),
                    bits(x2.to_host_vec().unwrap())
                );
            }
        },
    );
}

/// The output's gather: rank 0 receives every rank's values (in messages of at most `chunk`
/// values, several rounds here), the other ranks hold nothing.
#[test]
fn the_output_gather_brings_every_ranks_values_to_rank_0_in_bounded_chunks() {
    on_ranks(
        "the_output_gather_brings_every_ranks_values_to_rank_0_in_bounded_chunks",
        &[2, 4],
        |comm| {
            let values =
                |r: usize| -> Vec<f64> { (0..5 * r + 3).map(|i| (1000 * r + i) as f64).collect() };
            let lens: Vec<usize> = (0..comm.size()).map(|r| values(r).len()).collect();
            let mine = values(comm.rank());
            for chunk in [1, 4, 1 << 20] {
                let got = sim::windows::gather_to_root(&**comm, &mine, &lens, chunk).unwrap();
                match got {
                    Some(all) => {
                        assert_eq!(comm.rank(), 0);
                        let expected: Vec<Vec<f64>> = (0..comm.size()).map(values).collect();
                        assert_eq!(all, expected, "chunk {chunk}");
                    }
                    None => assert_ne!(comm.rank(), 0),
                }
            }
            // a length that is not the agreed one is an error, not a hang
            assert!(
                sim::windows::gather_to_root(&**comm, &[1.0; 2], &lens, 4).is_err()
                    || lens[comm.rank()] == 2
            );
        },
    );
}

/// The clamped 16 x 6 x 6 beam the device distributed-AMG tests solve, on the ranks of a test:
/// this rank's part and clamped stiffness, the distributed pattern and the AMG options.
struct ClampedBeam {
    part: MeshPart,
    k_local: Bsr,
    pattern: Arc<DistPattern>,
    params: amg::AmgParams,
}

impl ClampedBeam {
    /// The distributed operator of the local values `k` (on [`ClampedBeam::pattern`]).
    fn operator(&self, k: &Bsr) -> DistBsr {
        let mut a = DistBsr::zeros(self.pattern.clone());
        a.set_from_local(k).unwrap();
        a
    }

    /// Collective: the [`clamped_beam`]'s hierarchy set up with its fine operator on `device`
    /// (so its levels live there).
    fn device_hierarchy(&self, device: &linalg::Device) -> amg::dist_cycle::DistHierarchy {
        let ids = &self.part.node_serial_ids[..self.part.n_owned_nodes()];
        let fine = self.operator(&self.k_local).to_device(device).unwrap();
        let modes = turned_beam_modes(ids, 0.0);
        amg::dist_cycle::DistHierarchy::new(fine, ids, modes, 6, &self.params).unwrap()
    }
}

/// Asserts that `other` (levels on the host or a GPU) has the levels of `reference` bit for bit:
/// the level count and ranks, every level's operator and, above the coarsest, its point-block
/// Jacobi inverses and eigenvalue estimate (`what` names the comparison in a failure).
fn assert_same_levels(
    reference: &amg::dist_cycle::DistHierarchy,
    other: &amg::dist_cycle::DistHierarchy,
    what: &str,
) {
    let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(other.n_levels(), reference.n_levels(), "{what}: levels");
    assert_eq!(
        other.level_ranks(),
        reference.level_ranks(),
        "{what}: ranks"
    );
    for l in 0..reference.n_levels() {
        let on_host = |h: &amg::dist_cycle::DistHierarchy| {
            h.level_operator(l)
                .unwrap()
                .to_device(&linalg::Device::Host)
                .unwrap()
        };
        assert_eq!(
            dist_bits(&on_host(reference)),
            dist_bits(&on_host(other)),
            "{what}: level {l}"
        );
        if let Some(s) = reference.level_smoother(l) {
            let inv = |s: &amg::smoother::Smoother| bits(s.pbj.inverse().to_host_vec().unwrap());
            let so = other.level_smoother(l).unwrap();
            assert_eq!(inv(s), inv(so), "{what}: level {l}: D^-1");
            assert_eq!(
                s.emax.to_bits(),
                so.emax.to_bits(),
                "{what}: level {l}: emax"
            );
        }
    }
}

/// The rigid-body modes of the [`clamped_beam`]'s nodes turned by `angle` about the x axis,
/// rows of the owned nodes `ids` (serial ids).
fn turned_beam_modes(ids: &[u64], angle: f64) -> Vec<f64> {
    let spec = BoxSpec::new([16, 6, 6], [0.0; 3], [8.0, 1.0, 1.0], CellKind::Hex8);
    let serial = mesh::generate_box(&spec).unwrap();
    let (c, s) = (angle.cos(), angle.sin());
    let turned: Vec<[f64; 3]> = serial
        .coords
        .iter()
        .map(|x| [x[0], c * x[1] - s * x[2], s * x[1] + c * x[2]])
        .collect();
    let nns = assembly::rigid_body_modes(&turned);
    ids.iter()
        .flat_map(|&s| nns[s as usize * 18..(s as usize + 1) * 18].to_vec())
        .collect()
}

/// Collective: the [`ClampedBeam`], its host hierarchy (coarse_eq_limit 150, up to 6 levels,
/// `process_eq_limit`, the serial rigid-body modes) and a right-hand side hashed from the serial dofs, zero on the
/// clamped nodes.
fn clamped_beam(
    comm: &Arc<dyn Comm>,
    process_eq_limit: Option<usize>,
    renewal: amg::Renewal,
) -> (ClampedBeam, amg::dist_cycle::DistHierarchy, Vector) {
    let spec = BoxSpec::new([16, 6, 6], [0.0; 3], [8.0, 1.0, 1.0], CellKind::Hex8);
    let serial = mesh::generate_box(&spec).unwrap();
    let part = mesh::generate_box_part(&spec, comm.rank(), comm.size()).unwrap();
    let (k_local, clamped) = clamped_stiffness(&part.mesh);
    let n_owned = part.n_owned_nodes();
    let fine = RowPartition::new(comm.clone(), n_owned).unwrap();
    let pattern = DistPattern::from_local(fine, k_local.pattern(), &part.node_globals, 3).unwrap();
    let nns = assembly::rigid_body_modes(&serial.coords);
    let owned_nns: Vec<f64> = part.node_serial_ids[..n_owned]
        .iter()
        .flat_map(|&s| nns[s as usize * 18..(s as usize + 1) * 18].iter().copied())
        .collect();
    let params = amg::AmgParams {
        coarse_eq_limit: 150,
        max_levels: 6,
        process_eq_limit,
        renewal,
        ..amg::AmgParams::default()
    };
    let beam = ClampedBeam {
        part,
        k_local,
        pattern,
        params,
    };
    let h = amg::dist_cycle::DistHierarchy::new(
        beam.operator(&beam.k_local),
        &beam.part.node_serial_ids[..n_owned],
        owned_nns,
        6,
        &beam.params,
    )
    .unwrap();
    // each level on the ranks `process_eq_limit` gives it
    let ranks = h.level_ranks();
    let limit = process_eq_limit.unwrap_or(amg::params::PROCESS_EQ_LIMIT_CPU);
    assert_eq!(
        ranks,
        expected_level_ranks(&h.level_unknowns(), limit, comm.size())
    );
    if comm.rank() == 0 {
        println!("process_eq_limit {process_eq_limit:?}: ranks per level {ranks:?}");
    }
    let mut b = beam.operator(&beam.k_local).new_owned_vector();
    for (e, v) in b.host_mut().unwrap().iter_mut().enumerate() {
        let s = beam.part.node_serial_ids[e / 3];
        *v = if clamped[e / 3] {
            0.0
        } else {
            signed_unit(splitmix64(3 * s + (e % 3) as u64 + 4242))
        };
    }
    (beam, h, b)
}

/// On one GPU per rank (2 ranks sharing the node's GPUs): CG with the distributed hierarchy's
/// levels on the device ([`amg::dist_cycle::DistHierarchy::to_device`]) equals CG on the host
/// (the same iterations, the solution's bits), before and after a hot update, which changes
/// no prolongator.
#[test]
fn device_cg_with_the_distributed_amg_equals_the_host_cg() {
    use amg::dist_cycle::DistHierarchy;
    use linalg::dist::{select_rank_devices, skip_multi_rank_gpu_test, RankDeviceRequest};

    let test = "device_cg_with_the_distributed_amg_equals_the_host_cg";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        // every level on both ranks (the coarsest solved redundantly on the hosts), then the
        // levels below the finest gathered onto rank 0 (the coarsest solved on its GPU)
        for process_eq_limit in [Some(1), Some(400)] {
            let device = select_rank_devices(comm, RankDeviceRequest::Cuda)
                .unwrap()
                .device;
            let (beam, mut h, b) = clamped_beam(comm, process_eq_limit, amg::Renewal::Recompute);
            let operator = |scale: f64| {
                let mut k = beam.k_local.clone();
                k.scale(scale).unwrap();
                beam.operator(&k)
            };
            let mut hd = h.to_device(&device).unwrap();
            let a = operator(1.0);
            let cg = amg::CgParams {
                rtol: 1e-8,
                ..Default::default()
            };
            let b_dev = b.to_device(&device).unwrap();
            let compare = |a: &DistBsr, h: &DistHierarchy, hd: &DistHierarchy, when: &str| {
                let mut x = a.new_owned_vector();
                let host = amg::cg_operator(a, &b, &mut x, h, &cg).unwrap();
                let a_dev = a.to_device(&device).unwrap();
                let mut x_dev = a_dev.owned_zeros().unwrap();
                let on_gpu = amg::cg_operator(&a_dev, &b_dev, &mut x_dev, hd, &cg).unwrap();
                assert!(host.converged && on_gpu.converged, "{when}");
                assert_eq!(on_gpu.iterations, host.iterations, "{when}: CG iterations");
                let (xh, xd) = (x.to_host_vec().unwrap(), x_dev.to_host_vec().unwrap());
                let mut err = [0.0, 0.0, 0.0];
                for (u, v) in xh.iter().zip(&xd) {
                    err[0] += (u - v).powi(2);
                    err[1] += u.powi(2);
                    err[2] += f64::from(u.to_bits() != v.to_bits());
                }
                comm.allreduce_sum(&mut err).unwrap();
                assert!(err[0].sqrt() <= 1e-12 * err[1].sqrt(), "{when}: {err:?}");
                // The same operations in the same order: the same bits (measured on an H100).
                assert_eq!(err[2], 0.0, "{when}: solution entries differing in bits");
                if comm.rank() == 0 {
                    println!(
                        "device distributed CG+AMG ({when}): {} iterations on GPU and host, {} entries differing in bits, relative difference {:.1e}",
                        host.iterations,
                        err[2],
                        (err[0] / err[1]).sqrt()
                    );
                }
            };
            compare(&a, &h, &hd, "cold");
            // A hot update on the host and one on the device (the new values uploaded): no P
            // changes.
            h.update(operator(2.0)).unwrap();
            let p_versions = hd.p_versions();
            let report = hd.update(operator(2.0)).unwrap();
            assert_eq!(report.p_versions, p_versions, "P changed by a hot update");
            assert_eq!(report.messages.prolongator_values, 0);
            assert!(report.transfers.host_to_device_bytes > 0);
            compare(&operator(2.0), &h, &hd, "hot");
            // The same cycle with the exchanges device to device (NCCL): the same bits again.
            use linalg::dist::{connect_rank_devices, DeviceExchange};
            match connect_rank_devices(comm, &device, DeviceExchange::Nccl) {
                Ok(_) => compare(&operator(2.0), &h, &hd, "hot, NCCL exchanges"),
                // one GPU shared by the ranks (NCCL refuses duplicate GPUs) or no NCCL library
                Err(e) if comm.rank() == 0 => println!("SKIP NCCL part of {test}: {e}"),
                Err(_) => {}
            }
            // and with the halos written straight into the neighbour's memory (CUDA IPC)
            match connect_rank_devices(comm, &device, DeviceExchange::Ipc) {
                Ok(_) => compare(&operator(2.0), &h, &hd, "hot, IPC exchanges"),
                Err(e) if comm.rank() == 0 => println!("SKIP IPC part of {test}: {e}"),
                Err(_) => {}
            }
        }
    });
}

/// On one GPU per rank (2 ranks sharing the node's GPUs): the cold set-up of a hierarchy whose
/// fine operator lives on the device (symbolic stages on the host copy, the numeric ones on the
/// device: `dist_cycle::device::coarsen`) equals the host cold set-up bit for bit on every level
/// (operators, point-block Jacobi inverses, eigenvalue estimates), with every level on both
/// ranks, with the levels below the finest gathered onto rank 0, and with unsmoothed
/// aggregation, also with the near-null rows on the device (`P0` made there); CG with it
/// takes the host's iterations to the host's bits, and a later hot update on the device
/// equals the host's.
#[test]
fn a_device_cold_setup_on_ranks_equals_the_host_cold_setup() {
    use linalg::dist::{select_rank_devices, skip_multi_rank_gpu_test, RankDeviceRequest};

    let test = "a_device_cold_setup_on_ranks_equals_the_host_cold_setup";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        let cases = [(Some(1), true), (Some(400), true), (Some(1), false)];
        for (process_eq_limit, smooth_prolongator) in cases {
            let device = select_rank_devices(comm, RankDeviceRequest::Cuda)
                .unwrap()
                .device;
            let (mut beam, _, b) = clamped_beam(comm, process_eq_limit, amg::Renewal::Recompute);
            beam.params.smooth_prolongator = smooth_prolongator;
            let n_owned = beam.part.n_owned_nodes();
            let ids = &beam.part.node_serial_ids[..n_owned];
            let modes = turned_beam_modes(ids, 0.0);
            let case =
                format!("process_eq_limit {process_eq_limit:?}, smoothed {smooth_prolongator}");
            let a_host = beam.operator(&beam.k_local);
            let mut host = amg::dist_cycle::DistHierarchy::new(
                beam.operator(&beam.k_local),
                ids,
                modes.clone(),
                6,
                &beam.params,
            )
            .unwrap();
            let a_dev = a_host.to_device(&device).unwrap();
            let mut hd = amg::dist_cycle::DistHierarchy::new(
                beam.operator(&beam.k_local).to_device(&device).unwrap(),
                ids,
                modes.clone(),
                6,
                &beam.params,
            )
            .unwrap();
            assert!(host.n_levels() > 2, "{case}: a hierarchy of several levels");
            let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_same_levels(&host, &hd, &format!("{case}, cold"));
            // the modes on the device (a GPU run's): `P0` made there from the host's plan
            // (`DistTentativePlan::numeric_on_device`), the same levels
            let modes_on_device = linalg::Vector::from(modes).to_device(&device).unwrap();
            let with_device_modes = amg::dist_cycle::DistHierarchy::new(
                beam.operator(&beam.k_local).to_device(&device).unwrap(),
                ids,
                modes_on_device,
                6,
                &beam.params,
            )
            .unwrap();
            assert_same_levels(
                &host,
                &with_device_modes,
                &format!("{case}, cold with the modes on the device"),
            );
            drop(with_device_modes);
            let cg = amg::CgParams {
                rtol: 1e-8,
                ..Default::default()
            };
            let b_dev = b.to_device(&device).unwrap();
            let mut solutions = Vec::new();
            for (pc, a, rhs) in [
                (&hd as &dyn amg::Preconditioner, &a_dev, &b_dev),
                (&host, &a_host, &b),
            ] {
                let mut x = a.owned_zeros().unwrap();
                let r = amg::cg_operator(a, rhs, &mut x, pc, &cg).unwrap();
                assert!(r.converged, "{case}: {r:?}");
                solutions.push((r.iterations, bits(x.to_host_vec().unwrap())));
            }
            assert_eq!(solutions[0], solutions[1], "{case}: device vs host CG");
            let values = congruence_scaled(&beam.k_local, &beam.part.node_serial_ids, 29, 0.05);
            host.update(beam.operator(&values)).unwrap();
            hd.update(beam.operator(&values).to_device(&device).unwrap())
                .unwrap();
            assert_same_levels(&host, &hd, &format!("{case}, hot update"));
        }
    });
}

/// On one GPU per rank (2 ranks sharing the node's GPUs): a renewal that keeps the
/// aggregates (every pattern kept) of a hierarchy whose levels live on the device takes the
/// new values in place (operators, `P` and its transpose, the device Galerkin product's `P`
/// values) and equals a fresh copy of the host hierarchy renewed alike
/// ([`amg::dist_cycle::DistHierarchy::to_device`]): CG with it equals CG with the fresh copy
/// and with the host hierarchy (iterations and bits), and a later device hot update equals the
/// host's hot update on every level (what a stale `P` in the device Galerkin product would
/// break).
#[test]
fn device_levels_take_a_kept_renewal_in_place() {
    use linalg::dist::{select_rank_devices, skip_multi_rank_gpu_test, RankDeviceRequest};

    let test = "device_levels_take_a_kept_renewal_in_place";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        for process_eq_limit in [Some(1), Some(400)] {
            let device = select_rank_devices(comm, RankDeviceRequest::Cuda)
                .unwrap()
                .device;
            let keep = amg::Renewal::KeepAggregates;
            let (beam, mut h, b) = clamped_beam(comm, process_eq_limit, keep);
            let n_owned = beam.part.n_owned_nodes();
            let ids = &beam.part.node_serial_ids[..n_owned];
            let mut hd = beam.device_hierarchy(&device);
            let owned_nns = turned_beam_modes(ids, 0.3);
            let report = h
                .set_near_null_space(beam.operator(&beam.k_local), owned_nns.clone())
                .unwrap();
            assert_eq!(report.plans_reused, h.n_levels() - 1);
            let fine = beam.operator(&beam.k_local).to_device(&device).unwrap();
            let p_versions = hd.p_versions();
            let report = hd.set_near_null_space(fine, owned_nns).unwrap();
            assert_eq!(report.plans_reused, hd.n_levels() - 1, "{report:?}");
            assert!(hd.p_versions() != p_versions, "new values of P");
            let fresh = h.to_device(&device).unwrap();
            let cg = amg::CgParams {
                rtol: 1e-8,
                ..Default::default()
            };
            let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let a_host = beam.operator(&beam.k_local);
            let a_dev = a_host.to_device(&device).unwrap();
            let b_dev = b.to_device(&device).unwrap();
            let mut solutions = Vec::new();
            for pc in [&hd as &dyn amg::Preconditioner, &fresh, &h] {
                let on_host = std::ptr::addr_eq(pc, &h as &dyn amg::Preconditioner);
                let (a, rhs) = if on_host {
                    (&a_host, &b)
                } else {
                    (&a_dev, &b_dev)
                };
                let mut x = a.owned_zeros().unwrap();
                let r = amg::cg_operator(a, rhs, &mut x, pc, &cg).unwrap();
                assert!(r.converged, "{r:?}");
                solutions.push((r.iterations, bits(x.to_host_vec().unwrap())));
            }
            assert_eq!(solutions[0], solutions[1], "refreshed vs fresh upload");
            assert_eq!(solutions[0], solutions[2], "refreshed vs host");
            // a hot update after the refresh: the device Galerkin product's P is the renewed one
            let values = congruence_scaled(&beam.k_local, &beam.part.node_serial_ids, 21, 0.05);
            h.update(beam.operator(&values)).unwrap();
            hd.update(beam.operator(&values).to_device(&device).unwrap())
                .unwrap();
            for l in 0..h.n_levels() {
                let host = h.level_operator(l).unwrap();
                let dev = hd
                    .level_operator(l)
                    .unwrap()
                    .to_device(&linalg::Device::Host)
                    .unwrap();
                assert_eq!(dist_bits(host), dist_bits(&dev), "hot update: level {l}");
            }
        }
    });
}

/// On one GPU per rank (2 ranks sharing the node's GPUs): a renewal that recomputes the
/// aggregates (the default `renewal: recompute`) of a hierarchy whose levels live on the device
/// keeps a level's plans where its recomputed aggregates are the kept ones (then its numeric
/// phases run on the device, as a kept renewal's) and equals the host renewal and a cold host
/// set-up bit for bit on every level (operators, point-block Jacobi inverses, eigenvalue
/// estimates): new modes (some levels afresh), the same modes again (every level kept), new
/// modes again; CG with it takes the cold set-up's iterations to its bits.
#[test]
fn a_device_recompute_renewal_on_ranks_keeps_unchanged_levels_and_equals_a_cold_setup() {
    use linalg::dist::{select_rank_devices, skip_multi_rank_gpu_test, RankDeviceRequest};

    let test = "a_device_recompute_renewal_on_ranks_keeps_unchanged_levels_and_equals_a_cold_setup";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        for process_eq_limit in [Some(1), Some(400)] {
            let device = select_rank_devices(comm, RankDeviceRequest::Cuda)
                .unwrap()
                .device;
            let recompute = amg::Renewal::Recompute;
            let (beam, mut host, b) = clamped_beam(comm, process_eq_limit, recompute);
            let (twin_beam, _, _) = clamped_beam(comm, process_eq_limit, recompute);
            let mut hd = twin_beam.device_hierarchy(&device);
            let n_owned = beam.part.n_owned_nodes();
            let ids = &beam.part.node_serial_ids[..n_owned];
            let a_host = beam.operator(&beam.k_local);
            let a_dev = twin_beam
                .operator(&twin_beam.k_local)
                .to_device(&device)
                .unwrap();
            let b_dev = b.to_device(&device).unwrap();
            let cg = amg::CgParams {
                rtol: 1e-8,
                ..Default::default()
            };
            let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for (round, angle) in [0.3, 0.3, 0.7].into_iter().enumerate() {
                let nns = turned_beam_modes(ids, angle);
                let host_report = host
                    .set_near_null_space(beam.operator(&beam.k_local), nns.clone())
                    .unwrap();
                let fine = twin_beam
                    .operator(&twin_beam.k_local)
                    .to_device(&device)
                    .unwrap();
                let report = hd.set_near_null_space(fine, nns.clone()).unwrap();
                assert_eq!(report.plans_reused, host_report.plans_reused, "{report:?}");
                assert!(report.plans_reused >= 1, "the fine level's aggregates stay");
                if round == 1 {
                    assert_eq!(report.plans_reused, hd.n_levels() - 1, "the same modes");
                }
                let cold = amg::dist_cycle::DistHierarchy::new(
                    beam.operator(&beam.k_local),
                    ids,
                    nns,
                    6,
                    &beam.params,
                )
                .unwrap();
                assert_same_levels(&cold, &host, &format!("angle {angle}, host renewal"));
                assert_same_levels(&cold, &hd, &format!("angle {angle}, device renewal"));
                let mut solutions = Vec::new();
                for (pc, a, rhs) in [
                    (&hd as &dyn amg::Preconditioner, &a_dev, &b_dev),
                    (&cold, &a_host, &b),
                ] {
                    let mut x = a.owned_zeros().unwrap();
                    let r = amg::cg_operator(a, rhs, &mut x, pc, &cg).unwrap();
                    assert!(r.converged, "{r:?}");
                    solutions.push((r.iterations, bits(x.to_host_vec().unwrap())));
                }
                assert_eq!(
                    solutions[0], solutions[1],
                    "angle {angle}: device vs cold CG"
                );
            }
        }
    });
}

/// On one GPU per rank (2 ranks sharing the node's GPUs): a kept renewal with its numeric
/// phases on the device ([`amg::dist_cycle::DistHierarchy::set_near_null_space`] of a
/// hierarchy whose levels live there: `A P0`, the
/// smoothing, `P`'s values, smoothers and Galerkin products where the levels live) equals the
/// host kept renewal ([`amg::dist_cycle::DistHierarchy::set_near_null_space`]) bit for bit on
/// every level (operators, point-block Jacobi inverses, eigenvalue estimates), twice in a row
/// (the second with the device smoothing plans made by the first), CG with it takes the host's
/// iterations to the host's bits, a later device hot update equals the host's, and the fine
/// operator never comes down (the bytes device to host are below its values': the smoothed
/// products, from which the host still makes `P`'s views, and scalars only).
#[test]
fn a_device_kept_renewal_on_ranks_equals_the_host_kept_renewal() {
    use linalg::dist::{select_rank_devices, skip_multi_rank_gpu_test, RankDeviceRequest};

    let test = "a_device_kept_renewal_on_ranks_equals_the_host_kept_renewal";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        // every level on both ranks, then the levels below the finest gathered onto rank 0
        for process_eq_limit in [Some(1), Some(400)] {
            let device = select_rank_devices(comm, RankDeviceRequest::Cuda)
                .unwrap()
                .device;
            let keep = amg::Renewal::KeepAggregates;
            // the host reference and the hierarchy whose levels live on the device: one cold
            // set-up each (the same bits)
            let (beam, mut host, b) = clamped_beam(comm, process_eq_limit, keep);
            // (each beam its own distributed pattern: the device operator on the twin's)
            let (twin_beam, _, _) = clamped_beam(comm, process_eq_limit, keep);
            let mut hd = twin_beam.device_hierarchy(&device);
            let n_owned = beam.part.n_owned_nodes();
            let ids = &beam.part.node_serial_ids[..n_owned];
            let a_host = beam.operator(&beam.k_local);
            let a_dev = twin_beam
                .operator(&twin_beam.k_local)
                .to_device(&device)
                .unwrap();
            let b_dev = b.to_device(&device).unwrap();
            let fine_bytes =
                8 * 9 * (a_host.diag().pattern().nnz() + a_host.offd().pattern().nnz());
            let cg = amg::CgParams {
                rtol: 1e-8,
                ..Default::default()
            };
            let bits = |v: Vec<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let mut up_with_host_modes = 0;
            // the modes on the host (uploaded `P0`), then twice on the device (the tentative
            // prolongator made there: `DistTentativePlan::numeric_on_device`, its device plan
            // made by the first and kept)
            for (angle, modes_on_device) in [(0.3, false), (0.7, true), (1.1, true)] {
                let nns = turned_beam_modes(ids, angle);
                host.set_near_null_space(beam.operator(&beam.k_local), nns.clone())
                    .unwrap();
                let fine = twin_beam
                    .operator(&twin_beam.k_local)
                    .to_device(&device)
                    .unwrap();
                let nns_bytes = 8 * nns.len();
                let report = match modes_on_device {
                    false => hd.set_near_null_space(fine, nns).unwrap(),
                    true => {
                        let on_device = linalg::Vector::from(nns).to_device(&device).unwrap();
                        hd.set_near_null_space(fine, on_device).unwrap()
                    }
                };
                assert_eq!(report.plans_reused, host.n_levels() - 1);
                assert_same_levels(&host, &hd, &format!("angle {angle}"));
                // with the modes on the device the fine `P0` (one block per owned vertex: the
                // modes' bytes) no longer goes up, only the rows of members of aggregates owned
                // by the other rank
                let up = report.transfers.host_to_device_bytes as usize;
                match modes_on_device {
                    false => up_with_host_modes = up,
                    true => assert!(
                        up + nns_bytes / 2 <= up_with_host_modes,
                        "angle {angle}: a renewal with the modes on the device moved {up} B up, \
                         with them on the host {up_with_host_modes} B (modes {nns_bytes} B): {report:?}"
                    ),
                }
                let down = report.transfers.device_to_host_bytes as usize;
                // P's views are still made on the host: the smoothed products come down (on this
                // small beam about 60 % of the fine operator's bytes); the fine operator alone
                // would be all of them
                assert!(
                    down < fine_bytes,
                    "a device kept renewal moved {down} B to the host (fine operator {fine_bytes} B): {report:?}"
                );
                let mut solutions = Vec::new();
                for (pc, a, rhs) in [
                    (&hd as &dyn amg::Preconditioner, &a_dev, &b_dev),
                    (&host, &a_host, &b),
                ] {
                    let mut x = a.owned_zeros().unwrap();
                    let r = amg::cg_operator(a, rhs, &mut x, pc, &cg).unwrap();
                    assert!(r.converged, "{r:?}");
                    solutions.push((r.iterations, bits(x.to_host_vec().unwrap())));
                }
                assert_eq!(
                    solutions[0], solutions[1],
                    "angle {angle}: device vs host CG"
                );
            }
            // a hot update after the device renewals: the device Galerkin product's P is the
            // renewed one
            let values = congruence_scaled(&beam.k_local, &beam.part.node_serial_ids, 23, 0.05);
            host.update(beam.operator(&values)).unwrap();
            hd.update(twin_beam.operator(&values).to_device(&device).unwrap())
                .unwrap();
            for l in 0..host.n_levels() {
                let h = host.level_operator(l).unwrap();
                let d = hd
                    .level_operator(l)
                    .unwrap()
                    .to_device(&linalg::Device::Host)
                    .unwrap();
                assert_eq!(dist_bits(h), dist_bits(&d), "hot update: level {l}");
            }
        }
    });
}

/// On one GPU rank (no halo to exchange): a kept renewal of a hierarchy whose levels live on
/// the GPU, with the new modes there, moves no vector host to device: each level's eigenvalue
/// start vector stays on the device from the last set-up (the same serial ids, so the same
/// entries), the smoother stage uploads nothing and every other stage's upload stays below a
/// tenth of the fine level's vector but the coarsest solver's and the first renewal's
/// tentative stage (its device plan; the stages' bytes are counted:
/// `SetupTimings::transfers`); the levels are the host kept renewal's bit for bit, twice in a
/// row. A recompute renewal's strength graphs number their vertices by ids kept on the GPU
/// (its coarsening stage uploads below a tenth of the fine vector), and where it keeps every
/// level its smoothing uploads nothing (the plans' slot maps kept there).
#[test]
fn a_device_kept_renewal_on_one_rank_uploads_no_vector() {
    use linalg::dist::{select_rank_devices, skip_multi_rank_gpu_test, RankDeviceRequest};

    let test = "a_device_kept_renewal_on_one_rank_uploads_no_vector";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[1], |comm| {
        let device = select_rank_devices(comm, RankDeviceRequest::Cuda)
            .unwrap()
            .device;
        let keep = amg::Renewal::KeepAggregates;
        let (beam, mut host, _) = clamped_beam(comm, None, keep);
        let (twin_beam, _, _) = clamped_beam(comm, None, keep);
        let mut hd = twin_beam.device_hierarchy(&device);
        let ids = &beam.part.node_serial_ids[..beam.part.n_owned_nodes()];
        let vector_bytes = 8 * 3 * ids.len() as u64;
        for (round, angle) in [0.3, 0.7].into_iter().enumerate() {
            let nns = turned_beam_modes(ids, angle);
            host.set_near_null_space(beam.operator(&beam.k_local), nns.clone())
                .unwrap();
            let fine = twin_beam
                .operator(&twin_beam.k_local)
                .to_device(&device)
                .unwrap();
            let on_device = linalg::Vector::from(nns).to_device(&device).unwrap();
            let report = hd.set_near_null_space(fine, on_device).unwrap();
            assert_eq!(report.plans_reused, host.n_levels() - 1, "{report:?}");
            assert_same_levels(&host, &hd, &format!("angle {angle}"));
            let stages = &report.timings.transfers;
            assert_eq!(
                stages.smoother.host_to_device_bytes, 0,
                "angle {angle}: the eigenvalue start vectors stay on the GPU: {stages:?}"
            );
            // left out: the coarsest level's solver, made anew with its block maps (u32s), and
            // the first renewal's tentative stage, which uploads the device plan of the
            // tentative prolongator (made once, kept by the later renewals)
            let counted =
                |name: &str| name != "coarse factor" && (round > 0 || name != "tentative");
            for (name, bytes) in stages.stages().into_iter().filter(|s| counted(s.0)) {
                assert!(
                    10 * bytes.host_to_device_bytes < vector_bytes,
                    "angle {angle}: stage {name} moved {} B up (fine vector {vector_bytes} B): \
                     {stages:?}",
                    bytes.host_to_device_bytes
                );
            }
        }
        // the default renewal (`recompute`): each level's strength graph numbers its vertices
        // by the ids kept on the GPU since the cold set-up (the same pattern and serial ids),
        // so its coarsening stage uploads no id (a level made afresh: its own few)
        let recompute = amg::Renewal::Recompute;
        let (twin_beam, _, _) = clamped_beam(comm, None, recompute);
        let mut hr = twin_beam.device_hierarchy(&device);
        for (round, angle) in [0.3, 0.3].into_iter().enumerate() {
            let fine = twin_beam
                .operator(&twin_beam.k_local)
                .to_device(&device)
                .unwrap();
            let nns = turned_beam_modes(ids, angle);
            let on_device = linalg::Vector::from(nns).to_device(&device).unwrap();
            let report = hr.set_near_null_space(fine, on_device).unwrap();
            assert!(report.plans_reused >= 1, "{report:?}");
            let coarsen = report.timings.transfers.coarsen;
            assert!(
                10 * coarsen.host_to_device_bytes < vector_bytes,
                "recompute, angle {angle}: the graphs moved {} B up (fine vector {vector_bytes} \
                 B): {report:?}",
                coarsen.host_to_device_bytes
            );
            // the second: every level kept, whose device smoothing (made anew by a `recompute`
            // renewal) takes the plan's slot maps kept on the GPU
            let smoothing = report.timings.transfers.smoothing;
            if round == 1 {
                assert_eq!(report.plans_reused, hr.n_levels() - 1, "{report:?}");
                assert_eq!(smoothing.host_to_device_bytes, 0, "{report:?}");
            }
        }
    });
}

/// On one GPU per rank (2 ranks sharing the node's GPUs): the hot update on the device
/// ([`amg::dist_cycle::DistHierarchy::update`] of its copy there) equals the host's
/// ([`amg::dist_cycle::DistHierarchy::update`]) bit for bit on every level (operator values,
/// point-block Jacobi inverse, eigenvalue estimate), uploads no operator (only the blocks
/// received from the other rank and scalars), and CG with the updated device hierarchy equals
/// CG with the updated host one (iterations and bits).
#[test]
fn device_hot_update_of_the_distributed_hierarchy_equals_the_host_hot_update() {
    use linalg::dist::{select_rank_devices, skip_multi_rank_gpu_test, RankDeviceRequest};

    let test = "device_hot_update_of_the_distributed_hierarchy_equals_the_host_hot_update";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        // every level on both ranks (the coarsest solved redundantly on the hosts), then the
        // levels below the finest gathered onto rank 0 (the coarsest solved on its GPU)
        for process_eq_limit in [Some(1), Some(400)] {
            let device = select_rank_devices(comm, RankDeviceRequest::Cuda)
                .unwrap()
                .device;
            let (beam, mut h, b) = clamped_beam(comm, process_eq_limit, amg::Renewal::Recompute);
            let (k_local, part, params) = (&beam.k_local, &beam.part, &beam.params);
            let operator = |k: &Bsr| beam.operator(k);
            assert!(h.n_levels() > 2, "a hierarchy of several levels");
            let mut hd = h.to_device(&device).unwrap();
            let b_dev = b.to_device(&device).unwrap();
            let cg = amg::CgParams {
                rtol: 1e-8,
                ..Default::default()
            };
            for seed in [11u64, 12, 13, 14] {
                if seed >= 13 {
                    // the third update with the reductions and halos GPU to GPU (NCCL), the
                    // fourth with the halos written into the neighbour's memory (IPC)
                    use linalg::dist::{connect_rank_devices, DeviceExchange};
                    let how = if seed == 13 {
                        DeviceExchange::Nccl
                    } else {
                        DeviceExchange::Ipc
                    };
                    if let Err(e) = connect_rank_devices(comm, &device, how) {
                        // one GPU shared by the ranks (NCCL refuses duplicate GPUs), no NCCL
                        // or no peer access
                        if comm.rank() == 0 {
                            println!("SKIP {} part of {test}: {e}", how.name());
                        }
                        break;
                    }
                }
                // new values in every block, still SPD (CG must converge on them below)
                let values = congruence_scaled(k_local, &part.node_serial_ids, seed, 0.05);
                h.update(operator(&values)).unwrap();
                let a_dev = operator(&values).to_device(&device).unwrap();
                if seed == 14 {
                    // the first update with peer writes opens the reductions' channels (their
                    // index tables go up once); the update measured below is a later one
                    hd.update(a_dev.to_device(&device).unwrap()).unwrap();
                }
                let bytes = hd.update(a_dev.to_device(&device).unwrap()).unwrap();
                let host_to_device = bytes.transfers.host_to_device_bytes;
                let received = bytes.messages.received_bytes;
                for l in 0..h.n_levels() {
                    let host = h.level_operator(l).unwrap();
                    let dev = hd
                        .level_operator(l)
                        .unwrap()
                        .to_device(&linalg::Device::Host)
                        .unwrap();
                    assert!(std::sync::Arc::ptr_eq(host.pattern(), dev.pattern()));
                    assert_eq!(dist_bits(host), dist_bits(&dev), "update {seed}: level {l}");
                    if let Some(s) = h.level_smoother(l) {
                        let inv = |s: &amg::smoother::Smoother| -> Vec<u64> {
                            let v = s.pbj.inverse().to_host_vec().unwrap();
                            v.iter().map(|x| x.to_bits()).collect()
                        };
                        let sd = hd.level_smoother(l).unwrap();
                        assert_eq!(inv(s), inv(sd), "update {seed}: level {l}: D^-1");
                        assert_eq!(s.emax.to_bits(), sd.emax.to_bits(), "level {l}: emax");
                    }
                }
                // No operator crosses: the received coarse blocks, the ghosts of the eigenvalue
                // estimates' products (at most eig_steps + 2 per level) and scalars only.
                let fine_bytes =
                    8 * (a_dev.diag().pattern().nnz() + a_dev.offd().pattern().nnz()) * 9;
                let ghost_bytes: u64 = (0..hd.n_levels() - 1)
                    .map(|l| {
                        let op = hd.level_operator(l).unwrap();
                        let halo = op.device_halo().unwrap();
                        halo.bytes_per_exchange().host_to_device * (params.eig_steps as u64 + 2)
                    })
                    .sum();
                // the partial coarse blocks cross between the ranks (one way only where the
                // coarse levels are on rank 0)
                let mut moved = [bytes.messages.sent_bytes as f64, received as f64];
                comm.allreduce_sum(&mut moved).unwrap();
                assert!(
                    moved[0] > 0.0 && moved[0] == moved[1],
                    "{moved:?}, {bytes:?}"
                );
                assert!(
                    host_to_device <= received + ghost_bytes + 4096,
                    "host to device bytes of a device hot update: {bytes:?}, ghosts {ghost_bytes}"
                );
                // besides the received blocks (all of them on rank 0 where the coarse levels
                // are there), far less than the fine operator
                assert!(
                    ((host_to_device - received.min(host_to_device)) as usize) < fine_bytes / 4,
                    "{bytes:?}"
                );
                if seed >= 13 {
                    // NCCL: the received blocks and ghosts no longer go through the host,
                    // only scalars do
                    assert!(host_to_device < 1024, "{bytes:?}");
                }

                let a_host = operator(&values);
                let mut x = a_host.new_owned_vector();
                let host = amg::cg_operator(&a_host, &b, &mut x, &h, &cg).unwrap();
                let mut x_dev = a_dev.owned_zeros().unwrap();
                let on_gpu = amg::cg_operator(&a_dev, &b_dev, &mut x_dev, &hd, &cg).unwrap();
                assert!(
                    host.converged && on_gpu.converged,
                    "update {seed}: CG converged on the host {} ({} iterations), on the GPU {} ({})",
                    host.converged,
                    host.iterations,
                    on_gpu.converged,
                    on_gpu.iterations
                );
                assert_eq!(on_gpu.iterations, host.iterations, "CG iterations");
                let (xh, xd) = (x.to_host_vec().unwrap(), x_dev.to_host_vec().unwrap());
                let mut differ = [xh
                    .iter()
                    .zip(&xd)
                    .filter(|(u, v)| u.to_bits() != v.to_bits())
                    .count() as f64];
                comm.allreduce_sum(&mut differ).unwrap();
                assert_eq!(differ[0], 0.0, "solution entries differing in bits");
                if comm.rank() == 0 {
                    println!(
                        "device distributed hot update {seed}: {} levels equal to the host's, {} CG iterations, bytes {bytes:?}",
                        h.n_levels(),
                        host.iterations
                    );
                }
            }
        }
    });
}

/// `inputs/` of the checkout: beside the sources, or under the working directory (the device
/// machine runs the staged test binary from a checkout's root).
fn inputs_dir() -> std::path::PathBuf {
    let beside = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../inputs");
    if beside.is_dir() {
        beside
    } else {
        std::path::PathBuf::from("inputs")
    }
}

/// The bits of a vector's values.
fn vector_bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// On one GPU per rank, at 1 and 2 ranks: a rank's part of `inputs/cantilever_q1.yaml` (linear
/// elasticity) and of `inputs/neo_hookean_block.yaml` (as the serial device Newton system's
/// test, neo-Hookean at a moderate state) assembled on its GPU (the serial device assembler over the part's owned and ghost cells)
/// equals the host rank assembly bit for bit: the residual (every local entry), the
/// rigid-body modes about `X + u` (`DeviceProblem::rigid_body_modes`: the host's
/// `distributed_modes`), the free
/// norm, the potential and the eliminated right-hand side's norm (reduced over the ranks
/// exactly), a dot of vectors with a ghost tail, and the tangent's owned rows gathered on the
/// GPU into the distributed matrix's diagonal and off-diagonal parts (`DistBsr::set_from_local`,
/// no host transfer after the plan's upload); the owned entries of the right-hand side and a
/// correction's ghosts filled from their owners on the GPU equal the host's.
#[test]
fn device_rank_assembly_equals_the_host_rank_assembly() {
    use linalg::dist::{select_rank_devices, skip_multi_rank_gpu_test, RankDeviceRequest};

    let test = "device_rank_assembly_equals_the_host_rank_assembly";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[1, 2], |comm| {
        let device = select_rank_devices(comm, RankDeviceRequest::Cuda)
            .unwrap()
            .device;
        for name in ["cantilever_q1", "neo_hookean_block"] {
            check_device_rank_assembly(comm, &device, name);
        }
    });
}

/// One input's part of [`device_rank_assembly_equals_the_host_rank_assembly`].
fn check_device_rank_assembly(comm: &Arc<dyn Comm>, device: &linalg::Device, name: &str) {
    use assembly::device::DeviceProblem;
    let ctx = device.cuda_context().unwrap().clone();
    let (rank, size) = (comm.rank(), comm.size());
    let input = inputs_dir().join(format!("{name}.yaml"));
    let config = config::load_with_overrides(&input, &[]).unwrap();
    let params = config.problem_params().unwrap();
    let part = solve::partition::build_mesh_part(&params.mesh, rank, size).unwrap();
    let mut problem = solve::problem::Problem::on_part(&params, &part, comm.clone()).unwrap();
    let discrete = &mut problem.discrete;
    // a small displacement of every local node, ghosts equal to their owners (a function of
    // the serial id)
    let mut u = discrete.zeros().unwrap();
    for (e, v) in u.host_mut().unwrap().iter_mut().enumerate() {
        let s = part.node_serial_ids[e / 3];
        *v = 1e-3 * signed_unit(splitmix64(3 * s + (e % 3) as u64 + 77));
    }
    let load_factor = 0.7;
    let mut host = discrete.new_system().unwrap();
    discrete.linearize(&u, load_factor, &mut host).unwrap();
    let mut dp = DeviceProblem::new(&ctx, discrete).unwrap();
    let mut ds = dp.new_system().unwrap();
    let ud = u.to_device(device).unwrap();
    dp.linearize(&ud, load_factor, &mut ds).unwrap();
    assert_eq!(
        vector_bits(&ds.residual.to_host_vec().unwrap()),
        vector_bits(host.residual.host().unwrap()),
        "{name}: residual"
    );
    // the rigid-body modes about `X + u` on the GPU (the centroid's sums over the ranks): the
    // host's distributed modes bit for bit
    let deformed: Vec<[f64; 3]> = part
        .mesh
        .coords
        .iter()
        .zip(u.host().unwrap().as_chunks::<3>().0)
        .map(|(x, d)| [x[0] + d[0], x[1] + d[1], x[2] + d[2]])
        .collect();
    let modes_h = solve::problem::distributed_modes(u.layout(), &deformed).unwrap();
    let modes_d = dp.rigid_body_modes(&ud).unwrap();
    assert_eq!(
        vector_bits(&modes_d.to_host_vec().unwrap()),
        vector_bits(modes_h.row_major().unwrap()),
        "{name}: rigid-body modes"
    );
    // reductions over the owned entries and cells, then the ranks: the host's bits
    let mut scratch = discrete.zeros().unwrap();
    let mut scratch_d = dp.zeros().unwrap();
    let free_h = discrete.free_norm(&host.residual, &mut scratch).unwrap();
    let free_d = dp.free_norm(&ds.residual, &mut scratch_d).unwrap();
    assert_eq!(free_h.to_bits(), free_d.to_bits(), "{name}: free norm");
    let pi_h = discrete.potential(&u, load_factor).unwrap();
    let pi_d = dp.potential(&ud, load_factor).unwrap();
    assert_eq!(
        pi_h.value.to_bits(),
        pi_d.value.to_bits(),
        "{name}: potential"
    );
    assert_eq!(pi_h.magnitude.to_bits(), pi_d.magnitude.to_bits());
    if name == "neo_hookean_block" {
        // serial node 171 (inside the block) pushed through its neighbours: the device ranks
        // name the serial run's failing cell, as the host ranks do
        let mut inverted = u.clone();
        for (n, &s) in part.node_serial_ids.iter().enumerate() {
            if s == 171 {
                inverted.host_mut().unwrap()[3 * n + 2] -= 2.0;
            }
        }
        let host_error = discrete.potential(&inverted, load_factor).unwrap_err();
        let inverted_d = inverted.to_device(device).unwrap();
        let device_error = dp.potential(&inverted_d, load_factor).unwrap_err();
        assert!(matches!(
            host_error,
            assembly::AssemblyError::ElementFailure { .. }
        ));
        assert_eq!(device_error.to_string(), host_error.to_string(), "{name}");
    }
    let rd = host.residual.to_device(device).unwrap();
    let dot_h = linalg::ops::dot(&u, &host.residual).unwrap();
    let dot_d = linalg::ops::dot(&ud, &rd).unwrap();
    assert_eq!(
        dot_h.to_bits(),
        dot_d.to_bits(),
        "{name}: dot with a ghost tail"
    );
    let norm_h = discrete.eliminate(&mut host).unwrap();
    let norm_d = dp.eliminate(&mut ds).unwrap();
    assert_eq!(
        norm_h.to_bits(),
        norm_d.to_bits(),
        "{name}: eliminated rhs norm"
    );
    assert_eq!(
        vector_bits(&ds.rhs.to_host_vec().unwrap()),
        vector_bits(host.rhs.host().unwrap()),
        "{name}: right-hand side"
    );

    // the eliminated tangent's owned rows, gathered on the GPU
    let partition = RowPartition::new(comm.clone(), part.n_owned_nodes()).unwrap();
    let pattern =
        DistPattern::from_local(partition, host.tangent.pattern(), &part.node_globals, 3).unwrap();
    let mut a_host = DistBsr::zeros(pattern.clone());
    a_host.set_from_local(&host.tangent).unwrap();
    let k_dev = ds.tangent;
    let mut a_dev = DistBsr::zeros(pattern.clone()).to_device(device).unwrap();
    a_dev.set_from_local(&k_dev).unwrap();
    let before = device.transfers();
    a_dev.set_from_local(&k_dev).unwrap();
    let after = device.transfers();
    assert_eq!(
        (after.host_to_device, after.device_to_host),
        (before.host_to_device, before.device_to_host),
        "{name}: a later gather moves nothing between host and GPU"
    );
    assert_eq!(
        dist_bits(&a_host),
        dist_bits(&a_dev.to_device(&linalg::Device::Host).unwrap()),
        "{name}: owned rows of the tangent"
    );
    // the right-hand side's owned entries, and a correction's ghosts from their owners
    let mut b_host = a_host.new_owned_vector();
    a_host.owned_from_local(&host.rhs, &mut b_host).unwrap();
    let rhs_d = host.rhs.to_device(device).unwrap();
    let mut b_dev = a_dev.owned_zeros().unwrap();
    a_dev.owned_from_local(&rhs_d, &mut b_dev).unwrap();
    assert_eq!(
        vector_bits(&b_dev.to_host_vec().unwrap()),
        vector_bits(b_host.host().unwrap())
    );
    let mut x_host = discrete.zeros().unwrap();
    a_host.local_from_owned(&b_host, &mut x_host).unwrap();
    let mut x_dev = discrete.zeros().unwrap().to_device(device).unwrap();
    a_dev.local_from_owned(&b_dev, &mut x_dev).unwrap();
    assert_eq!(
        vector_bits(&x_dev.to_host_vec().unwrap()),
        vector_bits(x_host.host().unwrap()),
        "{name}: owned entries and ghosts"
    );
    if rank == 0 {
        println!(
                "device rank assembly of {name} on {size} ranks: residual, tangent owned rows ({} + {} blocks), norms, potential and ghosts bit for bit",
                a_host.diag().pattern().nnz(),
                a_host.offd().pattern().nnz()
            );
    }
}

/// One `hexfem run` on the ranks of `comm` with `device` and CG + AMG; rank 0's summary.
fn run_on_ranks_with(
    comm: &Arc<dyn Comm>,
    input: &std::path::Path,
    device: &str,
    tag: &str,
) -> Option<io::Summary> {
    run_on_ranks_set(comm, input, device, tag, &[])
}

/// [`run_on_ranks_with`] with further `--set` overrides.
fn run_on_ranks_set(
    comm: &Arc<dyn Comm>,
    input: &std::path::Path,
    device: &str,
    tag: &str,
    sets: &[&str],
) -> Option<io::Summary> {
    run_on_ranks_reading(comm, input, device, tag, sets, 1 << 20, |outcome| {
        io::Summary::read(&outcome.summary).unwrap()
    })
}

/// Runs `input` on `device` (CG + AMG, `sets` overrides, output windows of `window` values)
/// over the ranks of `comm` in a scratch folder of `tag`; on rank 0 returns `read` of the
/// outcome, before the folder goes.
fn run_on_ranks_reading<T>(
    comm: &Arc<dyn Comm>,
    input: &std::path::Path,
    device: &str,
    tag: &str,
    sets: &[&str],
    window: usize,
    read: impl FnOnce(&sim::RunOutcome) -> T,
) -> Option<T> {
    let dir = std::env::temp_dir().join(format!("hexfem-mpi-{tag}-{}-{device}", comm.size()));
    if comm.rank() == 0 {
        let _ = std::fs::remove_dir_all(&dir);
    }
    // nobody starts before rank 0 has cleared the folder
    comm.allreduce_sum(&mut [0.0]).unwrap();
    let options = sim::RunOptions::new(input)
        .with_overrides(
            [
                format!("device={device}"),
                "linear_solver.method=cg_amg".into(),
            ]
            .into_iter()
            .chain(sets.iter().map(|s| s.to_string())),
        )
        .with_output_dir(dir.clone())
        .with_overwrite(true)
        .with_output_window(window);
    let outcome = sim::run(comm, &options, &sim::Quiet)
        .unwrap_or_else(|e| panic!("{} on {device}: {e:#}", input.display()));
    let read = (comm.rank() == 0).then(|| read(&outcome));
    comm.allreduce_sum(&mut [0.0]).unwrap();
    if comm.rank() == 0 {
        let _ = std::fs::remove_dir_all(&dir);
    }
    read
}

/// Each written step's datasets of some fields: (path, values).
type StepDatasets = Vec<(String, Vec<f64>)>;

/// On rank 0: every step's cell datasets of a run of `input` on `device` over the ranks of
/// `comm` writing `fields` (name, values per step), and its summary.
fn cell_fields_on_ranks(
    comm: &Arc<dyn Comm>,
    input: &std::path::Path,
    device: &str,
    fields: &[&str],
) -> Option<(io::Summary, StepDatasets)> {
    let written = format!("output.fields=[displacement, {}]", fields.join(", "));
    run_on_ranks_reading(
        comm,
        input,
        device,
        "cells",
        &[&written],
        1 << 16,
        |outcome| {
            let summary = io::Summary::read(&outcome.summary).unwrap();
            let results = io::ResultsReader::open(&outcome.h5).unwrap();
            let mut datasets = Vec::new();
            for (step, _) in results.steps().unwrap().into_iter().skip(1) {
                for field in fields {
                    let path = format!("steps/{step:06}/{field}");
                    datasets.push((path.clone(), results.read_f64(&path).unwrap().1));
                }
            }
            (summary, datasets)
        },
    )
}

/// On one GPU per rank, at 1 and 2 ranks: a run's cell fields and strains are computed on the
/// ranks' GPUs (they come down with the output's bytes: ten values a local cell at least) and
/// are the host rank run's to rounding, the same converged steps.
#[test]
fn device_rank_run_computes_its_cell_fields_on_the_gpus() {
    use linalg::dist::skip_multi_rank_gpu_test;

    let test = "device_rank_run_computes_its_cell_fields_on_the_gpus";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[1, 2], |comm| {
        let input = inputs_dir().join("neo_hookean_block.yaml");
        let fields = [
            "cauchy_stress",
            "von_mises",
            "jacobian",
            "energy_density",
            "green_lagrange_strain",
        ];
        let cpu = cell_fields_on_ranks(comm, &input, "cpu", &fields);
        let gpu = cell_fields_on_ranks(comm, &input, "cuda", &fields);
        let (Some((cs, cpu)), Some((gs, gpu))) = (cpu, gpu) else {
            return;
        };
        // rank 0's owned cells (its local cells, whose fields come down, include them)
        let cells = gs
            .ranks
            .as_ref()
            .map_or(gs.mesh.cells as u64, |r| r.owned_cells[0]);
        let (cs, gs) = (cs.steps.unwrap(), gs.steps.unwrap());
        assert_eq!(cs.len(), gs.len(), "converged steps");
        for s in &gs {
            let down = s
                .output_transfer_bytes
                .expect("the GPU run counts its output's bytes");
            assert!(
                down >= 80 * cells,
                "step {}: {down} bytes came down for the output, fewer than the cell fields",
                s.step
            );
        }
        assert_eq!(cpu.len(), gpu.len());
        let mut worst = 0.0f64;
        for ((path, c), (_, g)) in cpu.iter().zip(&gpu) {
            assert_eq!(c.len(), g.len(), "{path}");
            let scale = c.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
            let diff = c
                .iter()
                .zip(g)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(diff <= 1e-9 * scale, "{path}: {diff:e} of {scale:e}");
            worst = worst.max(diff / scale);
        }
        println!(
            "device rank run on {} ranks: {} cell datasets computed on the GPUs, the host's to {worst:.1e}",
            comm.size(),
            gpu.len()
        );
    });
}

/// On one GPU per rank, at 1 and 2 ranks: `hexfem run inputs/neo_hookean_block.yaml` with
/// `device: cuda` (each rank's Newton iteration on its GPU) gives the host rank run's
/// converged steps, Newton and CG iterations per step and displacements (to 1e-10), and every
/// Newton iteration moves nothing host to device outside its linear solve (scalars at most),
/// the tangent and right-hand side never going up after the first solve.
#[test]
fn device_rank_run_equals_the_host_rank_run() {
    use linalg::dist::skip_multi_rank_gpu_test;

    let test = "device_rank_run_equals_the_host_rank_run";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[1, 2], |comm| {
        let input = inputs_dir().join("neo_hookean_block.yaml");
        let cpu = run_on_ranks_with(comm, &input, "cpu", "rankdev");
        let gpu = run_on_ranks_with(comm, &input, "cuda", "rankdev");
        let (Some(cpu), Some(gpu)) = (cpu, gpu) else {
            return;
        };
        let (cs, gs) = (cpu.steps.unwrap(), gpu.steps.unwrap());
        assert_eq!(cs.len(), gs.len(), "converged steps");
        let mut first_solve = true;
        let mut later = 0;
        for (c, g) in cs.iter().zip(&gs) {
            assert_eq!(c.newton_iterations, g.newton_iterations, "step {}", c.step);
            assert_eq!(c.linear_iterations, g.linear_iterations, "step {}", c.step);
            let rel = (c.max_displacement - g.max_displacement).abs()
                / c.max_displacement.abs().max(1e-300);
            assert!(rel <= 1e-10, "step {}: max displacement {rel:e}", c.step);
            for (i, it) in g.linear_solver.as_array().unwrap().iter().enumerate() {
                let up = it["upload_bytes"]
                    .as_u64()
                    .expect("upload_bytes: the Newton iteration ran on the GPU");
                let d = &it["linear"]["device"];
                let field = |v: &serde_json::Value| v.as_u64().unwrap();
                let tangent = field(&d["upload_bytes"]);
                let solver = tangent
                    + field(&d["setup"]["host_to_device_bytes"])
                    + field(&d["solve"]["host_to_device_bytes"]);
                assert!(
                    up <= solver + 64,
                    "step {} iteration {i}: {up} bytes up, {solver} of them the linear solve's",
                    c.step
                );
                if !first_solve {
                    assert_eq!(tangent, 0, "step {} iteration {i}: tangent bytes", c.step);
                    later += 1;
                }
                first_solve = false;
            }
        }
        assert!(later > 0, "no Newton iteration after the first");
        println!(
            "device rank run on {} ranks: {} steps, Newton {:?}, CG {:?} as on the CPUs; nothing up outside the linear solves",
            comm.size(),
            gs.len(),
            gs.iter().map(|s| s.newton_iterations).collect::<Vec<_>>(),
            gs.iter().map(|s| s.linear_iterations.clone()).collect::<Vec<_>>()
        );
    });
}

/// On one GPU per rank, at 2 ranks: `hexfem run inputs/neo_hookean_block.yaml` with `device:
/// cuda` and `linear_solver.amg.renewal: keep_aggregates` (each load step's renewal with its
/// numeric phases on the GPUs, `DistHierarchy::set_near_null_space`) gives the host rank run's
/// converged steps, Newton and CG iterations per step and displacements (to 1e-10), and no
/// later Newton iteration's set-up downloads the tangent (its bytes device to host stay below
/// the first, cold, set-up's, which downloads the tangent's owned rows).
#[test]
fn device_rank_run_with_kept_renewals_equals_the_host_rank_run() {
    use linalg::dist::skip_multi_rank_gpu_test;

    let test = "device_rank_run_with_kept_renewals_equals_the_host_rank_run";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        let input = inputs_dir().join("neo_hookean_block.yaml");
        let keep = ["linear_solver.amg.renewal=keep_aggregates"];
        let cpu = run_on_ranks_set(comm, &input, "cpu", "rankkeep", &keep);
        let gpu = run_on_ranks_set(comm, &input, "cuda", "rankkeep", &keep);
        let (Some(cpu), Some(gpu)) = (cpu, gpu) else {
            return;
        };
        let (cs, gs) = (cpu.steps.unwrap(), gpu.steps.unwrap());
        assert_eq!(cs.len(), gs.len(), "converged steps");
        assert!(gs.len() > 1, "a renewal needs a second load step");
        let mut cold_down = None;
        for (c, g) in cs.iter().zip(&gs) {
            assert_eq!(c.newton_iterations, g.newton_iterations, "step {}", c.step);
            assert_eq!(c.linear_iterations, g.linear_iterations, "step {}", c.step);
            let rel = (c.max_displacement - g.max_displacement).abs()
                / c.max_displacement.abs().max(1e-300);
            assert!(rel <= 1e-10, "step {}: max displacement {rel:e}", c.step);
            for (i, it) in g.linear_solver.as_array().unwrap().iter().enumerate() {
                let d = &it["linear"]["device"];
                let field = |v: &serde_json::Value| v.as_u64().unwrap();
                let down = field(&d["setup"]["device_to_host_bytes"]);
                match cold_down {
                    None => cold_down = Some(down),
                    Some(cold) => assert!(
                        down < cold,
                        "step {} iteration {i}: the set-up moved {down} B down (the cold one {cold} B)",
                        c.step
                    ),
                }
            }
        }
        println!(
            "device rank run with kept renewals on {} ranks: {} steps, Newton {:?}, CG {:?} as on the CPUs",
            comm.size(),
            gs.len(),
            gs.iter().map(|s| s.newton_iterations).collect::<Vec<_>>(),
            gs.iter().map(|s| s.linear_iterations.clone()).collect::<Vec<_>>()
        );
    });
}

/// Sets by geometry on a rank's part (issue 27): on a box part (faces among the box's sides,
/// whatever the part's own boundary) and on a file mesh (Exodus, selected before METIS), every
/// local node, cell and cell face is in a part's set exactly when its serial counterpart is in
/// the serial run's set.
#[test]
fn geometric_sets_on_rank_parts_are_the_serial_sets() {
    on_ranks(
        "geometric_sets_on_rank_parts_are_the_serial_sets",
        &[2, 3],
        |comm| {
            let twin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../mesh/tests/data/twins/twin_q1_cdf2.exo");
            let sets = "sets:\n\
                \x20 plane: { kind: faces, plane: { point: [0, 0, 0], normal: [1, 0, 0] } }\n\
                \x20 up: { kind: faces, normal: [0, 0, 1] }\n\
                \x20 corner: { kind: nodes, box: { lower: [0, 0, 0], upper: [0.5, 0.5, 2] } }\n\
                \x20 half: { kind: cells, expression: \"x - 1.5\" }\n";
            let materials =
                "materials: [{ model: linear, young_modulus: 1.0, poisson_ratio: 0.3 }]\n";
            for mesh_yaml in [
                "mesh: { box: { cells: [6, 3, 4], lower: [0, 0, 0], upper: [3, 2, 2] } }\n"
                    .to_string(),
                format!("mesh: {{ gmsh: {{ file: {} }} }}\n", twin.display()),
            ] {
                let text = format!("{mesh_yaml}{materials}{sets}");
                let config =
                    config::load_str(&text, std::path::Path::new("sets.yaml"), &[]).unwrap();
                let params = config.problem_params().unwrap();
                let mut serial = solve::problem::build_mesh(&params.mesh).unwrap();
                solve::geometric_sets::add_geometric_sets(
                    &mut serial,
                    &params.sets,
                    None,
                    true,
                    None,
                )
                .unwrap();
                let part =
                    solve::partition::build_problem_mesh_part(&params, comm.rank(), comm.size())
                        .unwrap();
                let local = &part.mesh;
                for name in ["plane", "up"] {
                    for c in 0..local.n_cells() {
                        let s = part.cell_serial_ids[c] as usize;
                        for face in mesh::Face::ALL {
                            let in_part =
                                local.face_sets[name].contains(&mesh::CellFace { cell: c, face });
                            let in_serial =
                                serial.face_sets[name].contains(&mesh::CellFace { cell: s, face });
                            assert_eq!(in_part, in_serial, "{name}: cell {s} face {face:?}");
                        }
                    }
                }
                for n in 0..local.n_nodes() {
                    let s = part.node_serial_ids[n] as usize;
                    assert_eq!(
                        local.node_sets["corner"].contains(&n),
                        serial.node_sets["corner"].contains(&s),
                        "corner: node {s}"
                    );
                }
                for c in 0..local.n_cells() {
                    let s = part.cell_serial_ids[c] as usize;
                    assert_eq!(
                        local.cell_sets["half"].contains(&c),
                        serial.cell_sets["half"].contains(&s),
                        "half: cell {s}"
                    );
                }
            }
        },
    );
}

/// One rank is the serial case: the distributed hierarchy on one rank (the one set-up loop over
/// `DistBsr`) has the serial hierarchy's levels bit for bit (every operator's pattern and
/// values, every eigenvalue estimate), and CG preconditioned by it takes the serial iterations
/// to the serial solution's bits.
#[test]
fn the_distributed_hierarchy_on_one_rank_is_the_serial_one_bit_for_bit() {
    let spec = BoxSpec::new([16, 6, 6], [0.0; 3], [8.0, 1.0, 1.0], CellKind::Hex8);
    let serial = mesh::generate_box(&spec).unwrap();
    let whole = mesh::generate_box_part(&spec, 0, 1).unwrap();
    let (k, clamped) = clamped_stiffness(&serial);
    let modes = assembly::rigid_body_modes(&serial.coords);
    let nns = amg::NearNullSpace::from_row_major(k.n_rows(), 6, modes.clone()).unwrap();
    let params = amg::AmgParams {
        coarse_eq_limit: 150,
        max_levels: 6,
        ..amg::AmgParams::default()
    };
    let hs = amg::Hierarchy::setup(&k, &nns, &params).unwrap();
    // one rank: the serial ids are the local ones
    let n_owned = whole.n_owned_nodes();
    let ids = &whole.node_serial_ids[..n_owned];
    assert!(ids.iter().enumerate().all(|(i, &s)| i as u64 == s));
    let (k_local, _) = clamped_stiffness(&whole.mesh);
    let fine = RowPartition::new(linalg::comm::SelfComm::shared(), n_owned).unwrap();
    let pattern = DistPattern::from_local(fine, k_local.pattern(), &whole.node_globals, 3).unwrap();
    let operator = || {
        let mut a = DistBsr::zeros(pattern.clone());
        a.set_from_local(&k_local).unwrap();
        a
    };
    let a = operator();
    let hd = amg::dist_cycle::DistHierarchy::new(operator(), ids, modes, 6, &params).unwrap();
    assert!(hs.n_levels() >= 3);
    assert_eq!(hs.n_levels(), hd.n_levels());
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for l in 0..hs.n_levels() {
        let (s, d) = (hs.operator(l).unwrap(), hd.level_operator(l).unwrap());
        assert_eq!(
            d.offd().pattern().nnz(),
            0,
            "level {l}: one rank has no ghosts"
        );
        assert_eq!(
            s.pattern().row_ptr(),
            d.diag().pattern().row_ptr(),
            "level {l}"
        );
        assert_eq!(
            s.pattern().col_idx(),
            d.diag().pattern().col_idx(),
            "level {l}"
        );
        assert_eq!(
            bits(s.host().unwrap()),
            bits(d.diag().host().unwrap()),
            "level {l}: values"
        );
    }
    let serial_emax: Vec<f64> = (0..hs.n_levels())
        .filter_map(|l| hs.smoother(l).map(|s| s.emax))
        .collect();
    assert_eq!(bits(&serial_emax), bits(&hd.emax()), "eigenvalue estimates");
    let rhs: Vec<f64> = (0..k.n_rows())
        .map(|e| {
            if clamped[e / 3] {
                0.0
            } else {
                signed_unit(splitmix64(e as u64 + 4242))
            }
        })
        .collect();
    let cg = amg::CgParams {
        rtol: 1e-8,
        ..Default::default()
    };
    let mut xs = Vector::zeros(k.n_rows());
    let on_serial = amg::cg(&k, &Vector::from_vec(rhs.clone()), &mut xs, &hs, &cg).unwrap();
    let mut b = a.new_owned_vector();
    b.host_mut().unwrap().copy_from_slice(&rhs);
    let mut xd = a.new_owned_vector();
    let on_rank = amg::cg_operator(&a, &b, &mut xd, &hd, &cg).unwrap();
    assert!(on_serial.converged, "{on_serial:?}");
    assert_eq!(on_serial.iterations, on_rank.iterations, "CG iterations");
    let (xs, xd) = (xs.to_host_vec().unwrap(), xd.to_host_vec().unwrap());
    assert_eq!(bits(&xs), bits(&xd), "the solution");
}

/// A linear run crushed past small strains (cells with `det F < 0`) warns the same on any rank
/// count: the serial run's step warnings (how many cells are inverted, the least `det F` and
/// its cell in the serial numbering, the units advice) are the rank run's, word for word.
#[test]
fn inverted_cell_warnings_are_the_same_on_any_rank_count() {
    on_ranks(
        "inverted_cell_warnings_are_the_same_on_any_rank_count",
        &[2, 3, 4],
        |comm| {
            // an unsymmetric box and load: one cell has the least det F
            let input = inputs_dir().join("cantilever_q1.yaml");
            let overrides = [
                "mesh.box={ cells: [5, 3, 2], lower: [0, 0, 0], upper: [1, 0.7, 0.4] }",
                "materials.0.young_modulus=10.0",
                "boundary.traction=[{ set: xmax, value: [-1000.0, 250.0, 40.0] }]",
                "linear_solver.method=cg_amg",
                "linear_solver.rtol=1e-12",
            ];
            let run = |comm: &Arc<dyn Comm>, tag: &str| {
                let dir = std::env::temp_dir()
                    .join(format!("hexfem-mpi-inverted-{tag}-{}", std::process::id()));
                let options = sim::RunOptions::new(&input)
                    .with_overrides(overrides)
                    .with_output_dir(dir.clone())
                    .with_overwrite(true);
                let outcome = sim::run(comm, &options, &sim::Quiet)
                    .unwrap_or_else(|e| panic!("{tag}: {e:#}"));
                let summary = (comm.rank() == 0).then(|| io::Summary::read(&outcome.summary));
                comm.allreduce_sum(&mut [0.0]).unwrap();
                let warnings = summary.map(|s| {
                    let steps = s.unwrap().steps.unwrap();
                    steps.iter().map(|s| s.warnings.clone()).collect::<Vec<_>>()
                });
                if comm.rank() == 0 {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                warnings
            };
            let on_ranks = run(comm, &format!("ranks{}", comm.size()));
            if comm.rank() != 0 {
                return;
            }
            let serial = run(&linalg::comm::SelfComm::shared(), "serial");
            let (on_ranks, serial) = (on_ranks.unwrap(), serial.unwrap());
            assert!(
                serial
                    .iter()
                    .flatten()
                    .any(|w| w.contains("cells are inverted (J = det F = ")
                        && w.contains(" in cell ")),
                "{serial:?}"
            );
            assert_eq!(on_ranks, serial, "on {} ranks", comm.size());
            println!(
                "inverted cells on {} ranks as on one: {:?}",
                comm.size(),
                serial.iter().flatten().find(|w| w.contains("inverted"))
            );
        },
    );
}
