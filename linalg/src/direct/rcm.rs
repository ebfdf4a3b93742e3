//! Reverse Cuthill-McKee ordering of an undirected graph, started from pseudo-peripheral
//! vertices (George-Liu), one component after another.

/// Undirected graph in CSR form without self loops; neighbour lists sorted and unique.
pub(super) struct Graph {
    pub ptr: Vec<usize>,
    pub adj: Vec<usize>,
}

impl Graph {
    pub fn n(&self) -> usize {
        self.ptr.len() - 1
    }

    pub fn neighbours(&self, v: usize) -> &[usize] {
        &self.adj[self.ptr[v]..self.ptr[v + 1]]
    }

    pub fn degree(&self, v: usize) -> usize {
        self.ptr[v + 1] - self.ptr[v]
    }

    /// Symmetric closure of the edge list `(i, j)`, `i != j` (duplicates allowed).
    pub fn from_edges(n: usize, edges: impl Iterator<Item = (usize, usize)> + Clone) -> Self {
        let mut count = vec![0usize; n + 1];
        for (i, j) in edges.clone() {
            count[i + 1] += 1;
            count[j + 1] += 1;
        }
        for v in 0..n {
            count[v + 1] += count[v];
        }
        let mut fill = count.clone();
        let mut raw = vec![0usize; count[n]];
        for (i, j) in edges {
            raw[fill[i]] = j;
            fill[i] += 1;
            raw[fill[j]] = i;
            fill[j] += 1;
        }
        let mut ptr = Vec::with_capacity(n + 1);
        let mut adj = Vec::with_capacity(raw.len());
        ptr.push(0);
        for v in 0..n {
            let row = &mut raw[count[v]..count[v + 1]];
            row.sort_unstable();
            let start = adj.len();
            for &u in row.iter() {
                if adj.len() == start || adj[adj.len() - 1] != u {
                    adj.push(u);
                }
            }
            ptr.push(adj.len());
        }
        Graph { ptr, adj }
    }
}

/// Level structure search with reusable marks.
struct Bfs {
    mark: Vec<usize>,
    stamp: usize,
    queue: Vec<usize>,
}

impl Bfs {
    /// Breadth-first search from `root`; returns (eccentricity, vertices of the last level).
    fn levels(&mut self, g: &Graph, root: usize) -> (usize, Vec<usize>) {
        self.stamp += 1;
        self.queue.clear();
        self.queue.push(root);
        self.mark[root] = self.stamp;
        let (mut level_start, mut depth) = (0, 0);
        loop {
            let level_end = self.queue.len();
            for q in level_start..level_end {
                let v = self.queue[q];
                for &u in g.neighbours(v) {
                    if self.mark[u] != self.stamp {
                        self.mark[u] = self.stamp;
                        self.queue.push(u);
                    }
                }
            }
            if self.queue.len() == level_end {
                return (depth, self.queue[level_start..level_end].to_vec());
            }
            level_start = level_end;
            depth += 1;
        }
    }
}

/// George-Liu: move to a minimum-degree vertex of the last level while the eccentricity grows.
fn pseudo_peripheral(g: &Graph, bfs: &mut Bfs, seed: usize) -> usize {
    let mut v = seed;
    let (mut ecc, mut last) = bfs.levels(g, v);
    loop {
        let u = *last
            .iter()
            .min_by_key(|&&u| (g.degree(u), u))
            .expect("a level is never empty");
        let (ecc_u, last_u) = bfs.levels(g, u);
        if ecc_u <= ecc {
            return v;
        }
        (v, ecc, last) = (u, ecc_u, last_u);
    }
}

/// Reverse Cuthill-McKee order: `order[new] = old`. Components are taken in the order of their
/// lowest vertex; neighbours are queued by ascending (degree, index), so the result is unique.
pub(super) fn reverse_cuthill_mckee(g: &Graph) -> Vec<usize> {
    let n = g.n();
    let mut bfs = Bfs {
        mark: vec![0; n],
        stamp: 0,
        queue: Vec::new(),
    };
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut fresh = Vec::new();
    for seed in 0..n {
        if placed[seed] {
            continue;
        }
        let start = pseudo_peripheral(g, &mut bfs, seed);
        placed[start] = true;
        let mut head = order.len();
        order.push(start);
        while head < order.len() {
            let v = order[head];
            head += 1;
            fresh.clear();
            fresh.extend(g.neighbours(v).iter().copied().filter(|&u| !placed[u]));
            fresh.sort_unstable_by_key(|&u| (g.degree(u), u));
            for &u in &fresh {
                placed[u] = true;
                order.push(u);
            }
        }
    }
    order.reverse();
    order
}
