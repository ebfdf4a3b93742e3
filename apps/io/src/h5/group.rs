//! Old-style (symbol table) HDF5 groups written append-only: links are added in increasing name
//! order, and each transaction appends new copies of the nodes on the right edge of the group's
//! B-tree instead of changing the committed ones.

use std::io;

use super::encode::{
    align8, btree_node, heap_header, object_header, symbol_node, symbol_table, Message, LEAF_K,
    NODE_K, UNDEF,
};
use super::AppendFile;

/// The closed children of the rightmost node of one B-tree level (`keys[0]` is the node's left
/// key; child `i` holds the names after `keys[i]` up to `keys[i + 1]`). The level's open child
/// (the rightmost path, rewritten by every transaction) is added when the node is written.
#[derive(Debug)]
struct Level {
    keys: Vec<u64>,
    children: Vec<u64>,
}

/// A group being built. Calling order per transaction: [`Group::push`] for each new link (names
/// strictly increasing across the group's life), then [`Group::write_header`], whose address the
/// parent links to. Nodes that are full are written once; the nodes on the right edge are
/// written anew by each `write_header`. After an I/O error the group's state may refer to
/// abandoned bytes: drop it.
#[derive(Debug, Default)]
pub(crate) struct Group {
    /// The name heap's content: offset 0 is the empty name, every name NUL-terminated and
    /// padded to 8 bytes.
    heap: Vec<u8>,
    /// Bytes of the heap's data segment in the file (0 before the first write).
    heap_capacity: usize,
    heap_data: u64,
    heap_header: u64,
    /// Bytes of `heap` already in the file.
    heap_written: usize,
    /// Entries of the rightmost (open) symbol table node: (name offset, object header).
    leaf: Vec<(u64, u64)>,
    /// Closed children of the rightmost B-tree node per level, level 0 first.
    levels: Vec<Level>,
    last_name: Option<String>,
}

impl Group {
    pub fn new() -> Self {
        Group {
            heap: vec![0; 8],
            levels: vec![Level {
                keys: vec![0],
                children: Vec::new(),
            }],
            ..Group::default()
        }
    }

    /// Adds the link `name` -> `object_header`; `name` must sort after every earlier name.
    pub fn push(
        &mut self,
        file: &mut AppendFile,
        name: &str,
        object_header: u64,
    ) -> io::Result<()> {
        if name.is_empty() || self.last_name.as_deref().is_some_and(|last| last >= name) {
            return Err(io::Error::other(format!(
                "HDF5 link `{name}` is empty or added out of order"
            )));
        }
        self.last_name = Some(name.to_owned());
        if self.leaf.len() == 2 * LEAF_K {
            let key = self.leaf[self.leaf.len() - 1].0;
            let node = file.alloc(&symbol_node(&self.leaf))?;
            self.leaf.clear();
            self.close_child(file, 0, node, key)?;
        }
        let offset = self.heap.len() as u64;
        self.heap.extend_from_slice(name.as_bytes());
        self.heap.push(0);
        self.heap.resize(align8(self.heap.len()), 0);
        self.leaf.push((offset, object_header));
        Ok(())
    }

    /// Adds a finished child (last name at heap offset `key`) to `level`. A node that thereby
    /// fills up (no room left for the open child) is written and closed in turn one level up.
    fn close_child(
        &mut self,
        file: &mut AppendFile,
        level: usize,
        child: u64,
        key: u64,
    ) -> io::Result<()> {
        let node = &mut self.levels[level];
        node.children.push(child);
        node.keys.push(key);
        if node.children.len() < 2 * NODE_K {
            return Ok(());
        }
        let full = btree_node(level as u8, &node.keys, &node.children);
        *node = Level {
            keys: vec![key],
            children: Vec::new(),
        };
        let address = file.alloc(&full)?;
        if level + 1 == self.levels.len() {
            self.levels.push(Level {
                keys: vec![0],
                children: Vec::new(),
            });
        }
        self.close_child(file, level + 1, address, key)
    }

    /// Writes the open symbol table node and the right edge of the B-tree; returns the root.
    fn write_right_edge(&self, file: &mut AppendFile) -> io::Result<u64> {
        let mut open = match self.leaf.last() {
            Some(&(key, _)) => Some((file.alloc(&symbol_node(&self.leaf))?, key)),
            None => None,
        };
        let mut root = UNDEF;
        for (level, node) in self.levels.iter().enumerate() {
            let mut keys = node.keys.clone();
            let mut children = node.children.clone();
            if let Some((child, key)) = open {
                children.push(child);
                keys.push(key);
            }
            root = file.alloc(&btree_node(level as u8, &keys, &children))?;
            open = Some((root, *keys.last().expect("keys")));
        }
        Ok(root)
    }

    /// Writes the names added since the last call and a new object header for the group
    /// (its symbol table message, then `extra`); returns the header's address.
    pub fn write_header(&mut self, file: &mut AppendFile, extra: Vec<Message>) -> io::Result<u64> {
        if self.heap.len() > self.heap_capacity {
            // Reallocate the data segment, doubling, with a new heap header.
            let capacity = self.heap.len().max(2 * self.heap_capacity);
            let mut segment = self.heap.clone();
            segment.resize(capacity, 0);
            self.heap_data = file.alloc(&segment)?;
            self.heap_header = file.alloc(&heap_header(capacity as u64, self.heap_data))?;
            self.heap_capacity = capacity;
        } else if self.heap_written < self.heap.len() {
            // The new names go into the segment's unused tail, which no committed node names.
            let start = self.heap_written;
            file.write_unreferenced(self.heap_data + start as u64, &self.heap[start..])?;
        }
        self.heap_written = self.heap.len();
        let root = self.write_right_edge(file)?;
        let mut messages = vec![symbol_table(root, self.heap_header)];
        messages.extend(extra);
        file.alloc(&object_header(&messages))
    }

    /// Writes a complete group holding `links` (any order) in one go; returns its header.
    pub fn write_all(
        file: &mut AppendFile,
        mut links: Vec<(String, u64)>,
        extra: Vec<Message>,
    ) -> io::Result<u64> {
        links.sort();
        let mut group = Group::new();
        for (name, header) in &links {
            group.push(file, name, *header)?;
        }
        group.write_header(file, extra)
    }
}
