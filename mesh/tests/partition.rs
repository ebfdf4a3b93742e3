//! Mesh parts: generated box parts and partitioned meshes against the serial mesh.

use std::collections::BTreeSet;

use mesh::{
    generate_box, generate_box_part, generate_box_part_on, partition_mesh, BoxRankGrid, BoxSpec,
    CellKind, HexMesh, MeshPart,
};

/// Everything a part promises, checked against the serial mesh it is a part of.
fn check_part(serial: &HexMesh, part: &MeshPart) {
    part.mesh.validate().unwrap();
    let (r, n_owned) = (part.rank, part.n_owned_nodes());
    let owned = part.node_offsets[r]..part.node_offsets[r + 1];
    assert_eq!(
        part.node_globals[..n_owned],
        owned.clone().collect::<Vec<_>>()[..]
    );
    let ghosts = &part.node_globals[n_owned..];
    assert!(ghosts.windows(2).all(|w| w[0] < w[1]), "ghosts ascend");
    assert!(ghosts.iter().all(|g| !owned.contains(g)));
    assert_eq!(*part.node_offsets.last().unwrap(), serial.n_nodes() as u64);
    // Coordinates and connectivity are the serial ones, bit for bit.
    for (l, &s) in part.node_serial_ids.iter().enumerate() {
        assert_eq!(
            part.mesh.coords[l].map(f64::to_bits),
            serial.coords[s as usize].map(f64::to_bits)
        );
    }
    assert!(
        part.cell_serial_ids.windows(2).all(|w| w[0] < w[1]),
        "cells ascend"
    );
    let owned_serial: BTreeSet<u64> = part.node_serial_ids[..n_owned].iter().copied().collect();
    for (l, &c) in part.cell_serial_ids.iter().enumerate() {
        let nodes: Vec<u64> = part
            .mesh
            .cell_nodes(l)
            .iter()
            .map(|&n| part.node_serial_ids[n])
            .collect();
        let expected: Vec<u64> = serial
            .cell_nodes(c as usize)
            .iter()
            .map(|&n| n as u64)
            .collect();
        assert_eq!(nodes, expected, "cell {c}");
    }
    // Every cell with an owned node is local (one layer of ghost cells).
    let local: BTreeSet<u64> = part.cell_serial_ids.iter().copied().collect();
    for c in 0..serial.n_cells() {
        if serial
            .cell_nodes(c)
            .iter()
            .any(|&n| owned_serial.contains(&(n as u64)))
        {
            assert!(
                local.contains(&(c as u64)),
                "cell {c} touches an owned node"
            );
        }
    }
    // Sets are the serial sets restricted to the part.
    for (name, nodes) in &serial.node_sets {
        let got: BTreeSet<u64> = part.mesh.node_sets[name]
            .iter()
            .map(|&l| part.node_serial_ids[l])
            .collect();
        let want: BTreeSet<u64> = nodes
            .iter()
            .map(|&n| n as u64)
            .filter(|n| part.node_serial_ids.contains(n))
            .collect();
        assert_eq!(got, want, "node set {name}");
    }
    for (name, faces) in &serial.face_sets {
        let got: BTreeSet<(u64, u8)> = part.mesh.face_sets[name]
            .iter()
            .map(|cf| (part.cell_serial_ids[cf.cell], cf.face as u8))
            .collect();
        let want: BTreeSet<(u64, u8)> = faces
            .iter()
            .map(|cf| (cf.cell as u64, cf.face as u8))
            .filter(|(c, _)| local.contains(c))
            .collect();
        assert_eq!(got, want, "face set {name}");
    }
}

/// Every cell is owned by exactly one rank, every node by exactly one.
fn check_cover(serial: &HexMesh, parts: &[MeshPart]) {
    let mut owner_count = vec![0; serial.n_cells()];
    let mut node_count = vec![0; serial.n_nodes()];
    for part in parts {
        for (l, &c) in part.cell_serial_ids.iter().enumerate() {
            owner_count[c as usize] += part.cell_owned[l] as usize;
        }
        for &s in &part.node_serial_ids[..part.n_owned_nodes()] {
            node_count[s as usize] += 1;
        }
        assert_eq!(part.node_offsets, parts[0].node_offsets);
    }
    assert!(owner_count.iter().all(|&k| k == 1));
    assert!(node_count.iter().all(|&k| k == 1));
}

fn specs() -> Vec<BoxSpec> {
    let corners = [
        [0.0, 0.0, 0.0],
        [2.0, 0.1, 0.0],
        [0.2, 1.0, 0.1],
        [2.1, 1.2, 0.0],
        [0.0, 0.1, 1.0],
        [2.0, 0.0, 1.1],
        [0.1, 1.1, 1.0],
        [2.2, 1.0, 1.3],
    ];
    vec![
        BoxSpec::new([5, 3, 4], [0.0; 3], [1.0, 0.7, 0.9], CellKind::Hex8),
        BoxSpec::mapped([3, 2, 3], corners, CellKind::Hex27),
        BoxSpec::new([1, 1, 2], [0.0; 3], [1.0; 3], CellKind::Hex8),
        BoxSpec::new([7, 2, 2], [0.0; 3], [7.0, 1.0, 1.0], CellKind::Hex8),
        BoxSpec::new([2, 3, 2], [0.0; 3], [1.0; 3], CellKind::Hex27),
    ]
}

#[test]
fn generated_box_parts_are_the_serial_box_cut_in_a_grid_of_boxes() {
    for spec in specs() {
        let serial = generate_box(&spec).unwrap();
        assert_eq!(generate_box_part(&spec, 0, 1).unwrap().mesh, serial);
        let counts = spec.cells.map(|c| spec.kind.order() * c + 1);
        for n_ranks in 1..=9 {
            let parts: Vec<MeshPart> = (0..n_ranks)
                .map(|r| generate_box_part(&spec, r, n_ranks).unwrap())
                .collect();
            let z_only = BoxRankGrid::new(counts, n_ranks).ranks[..2] == [1, 1];
            for part in &parts {
                check_part(&serial, part);
                // Cut in z only: the serial numbering.
                if z_only {
                    assert_eq!(part.node_globals, part.node_serial_ids);
                }
            }
            check_cover(&serial, &parts);
        }
    }
    assert!(generate_box_part(&specs()[0], 3, 3).is_err());
}

#[test]
fn box_rank_grids_cut_the_fewest_nodes() {
    let grid = |counts, n| BoxRankGrid::new(counts, n).ranks;
    // a cube: one axis (the last) for 2 and 3 ranks, two for 4, all three for 8
    assert_eq!(grid([34; 3], 1), [1, 1, 1]);
    assert_eq!(grid([34; 3], 2), [1, 1, 2]);
    assert_eq!(grid([34; 3], 3), [1, 1, 3]);
    assert_eq!(grid([34; 3], 4), [1, 2, 2]);
    assert_eq!(grid([34; 3], 8), [2, 2, 2]);
    assert_eq!(grid([34; 3], 12), [2, 2, 3]);
    assert_eq!(grid([34; 3], 64), [4, 4, 4]);
    // a beam along x is cut in slabs across x
    assert_eq!(grid([81, 9, 9], 4), [4, 1, 1]);
    assert_eq!(grid([81, 9, 9], 8), [8, 1, 1]);
    // the longest axis first
    assert_eq!(grid([6, 4, 5], 2), [2, 1, 1]);
    // no axis cut into more runs than it has layers while another grid avoids it
    assert_eq!(grid([2, 2, 20], 4), [1, 1, 4]);
    assert_eq!(grid([2, 2, 3], 4), [1, 2, 2]);
    // more ranks than nodes: some boxes are empty, every rank has its place
    assert_eq!(grid([2, 2, 3], 13), [1, 1, 13]);
}

#[test]
fn box_parts_on_a_chosen_grid_are_the_serial_box() {
    for spec in specs() {
        let serial = generate_box(&spec).unwrap();
        let counts = spec.node_counts();
        for ranks in [[1, 1, 4], [4, 1, 1], [2, 1, 2], [1, 3, 2], [2, 2, 2]] {
            let grid = BoxRankGrid::with_ranks(counts, ranks).unwrap();
            let parts: Vec<MeshPart> = (0..grid.n_ranks())
                .map(|r| generate_box_part_on(&spec, r, &grid).unwrap())
                .collect();
            for part in &parts {
                check_part(&serial, part);
            }
            check_cover(&serial, &parts);
        }
        let other = BoxRankGrid::with_ranks([counts[0] + 1, counts[1], counts[2]], [2, 1, 1]);
        assert!(generate_box_part_on(&spec, 0, &other.unwrap()).is_err());
    }
    assert!(BoxRankGrid::with_ranks([3, 3, 3], [2, 0, 2]).is_err());
    assert!(BoxRankGrid::with_ranks([3, 3, 3], [1 << 40, 1 << 40, 2]).is_err());
}

#[test]
fn partitioned_meshes_number_nodes_by_owner_and_keep_the_serial_ids() {
    for spec in specs() {
        let serial = generate_box(&spec).unwrap();
        for n_ranks in 1..=4u32 {
            // Stripes of cells in x, reversed: rank order is not the serial order.
            let cells = spec.cells;
            let cell_part: Vec<u32> = (0..serial.n_cells())
                .map(|c| (n_ranks - 1) - ((c % cells[0]) as u32 * n_ranks / cells[0] as u32))
                .collect();
            let parts: Vec<MeshPart> = (0..n_ranks as usize)
                .map(|r| partition_mesh(&serial, &cell_part, r, n_ranks as usize).unwrap())
                .collect();
            for part in &parts {
                check_part(&serial, part);
            }
            check_cover(&serial, &parts);
        }
    }
    let serial = generate_box(&specs()[0]).unwrap();
    assert!(partition_mesh(&serial, &vec![5; serial.n_cells()], 0, 2).is_err());
    assert!(partition_mesh(&serial, &[0], 0, 2).is_err());
}

#[test]
fn metis_splits_meshes_into_balanced_parts_deterministically() {
    let gmsh = mesh::read_gmsh(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../inputs/meshes/cook_q1.msh"
    )))
    .unwrap();
    let boxed = generate_box(&specs()[0]).unwrap();
    for serial in [&gmsh, &boxed] {
        for n_parts in [1usize, 2, 3, 4] {
            let parts = mesh::metis_cell_parts(serial, n_parts).unwrap();
            assert_eq!(
                parts,
                mesh::metis_cell_parts(serial, n_parts).unwrap(),
                "deterministic"
            );
            let mut sizes = vec![0usize; n_parts];
            for &p in &parts {
                sizes[p as usize] += 1;
            }
            let ideal = serial.n_cells() as f64 / n_parts as f64;
            for &s in &sizes {
                assert!(s > 0 && (s as f64) <= 1.1 * ideal + 1.0, "sizes {sizes:?}");
            }
            let split: Vec<MeshPart> = (0..n_parts)
                .map(|r| partition_mesh(serial, &parts, r, n_parts).unwrap())
                .collect();
            for part in &split {
                check_part(serial, part);
            }
            check_cover(serial, &split);
        }
    }
}
