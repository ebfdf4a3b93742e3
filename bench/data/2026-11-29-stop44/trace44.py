# stop 44 call 2: run from the checkout root on main 96db7e1, then build `hexfem`; marks print with HEXFEM_TRACE=1 on rank 0.
# TEMPORARY measurement aid (never committed): inserts crate::trace::mark("label") after anchor lines.
import sys
TRACE='''//! TEMPORARY measurement aid (not to be committed).
use std::cell::Cell;
use std::time::Instant;
thread_local!(static LAST: Cell<Option<Instant>> = const { Cell::new(None) });
fn on() -> bool {
    std::env::var_os("HEXFEM_TRACE").is_some()
        && std::env::var("OMPI_COMM_WORLD_RANK").map_or(true, |r| r == "0")
}
pub(crate) fn reset() {
    LAST.with(|l| l.set(Some(Instant::now())));
}
pub(crate) fn mark(name: &str) {
    let now = Instant::now();
    let prev = LAST.with(|l| l.replace(Some(now)));
    if let (true, Some(p)) = (on(), prev) {
        eprintln!("TRACE {name} {:.5}", (now - p).as_secs_f64());
    }
}
'''
open('amg/src/trace.rs','w').write(TRACE)
lib='amg/src/lib.rs'
s=open(lib).read()
if 'mod trace' not in s:
    s=s.replace('pub mod aggregation;','pub(crate) mod trace;\npub mod aggregation;',1); open(lib,'w').write(s)
def ins(path, anchor, label, start=None, before=False):
    s=open(path).read()
    i0 = s.index(start) if start else 0
    i=s.find(anchor, i0)
    if i<0:
        print("MISSING", path, label); return
    if before:
        ls=s.rfind('\n',0,i)+1
        ind=len(s[ls:i])-len(s[ls:i].lstrip())
        stmt = label if label=='reset()' else 'mark("%s")'%label
        s=s[:ls]+' '*ind+'crate::trace::%s;\n'%stmt+s[ls:]
    else:
        e=s.index('\n',i+len(anchor)-1)+1
        line=s[s.rfind('\n',0,e-1)+1:e]
        ind=len(line)-len(line.lstrip())
        s=s[:e]+' '*ind+'crate::trace::mark("%s");\n'%label+s[e:]
    open(path,'w').write(s)
d='amg/src/dist_cycle/device.rs'
C='pub(super) fn coarsen('
ins(d,'let device = a.device();','reset()',C,before=True)
ins(d,'let emax = dist_emax(a, &pbj, near_null, params, level)?;','dev.emax',C)
ins(d,'let DistTentative {','dev.SmoothingPlan::new',C,before=True)
ins(d,'let mut on_device = DeviceSmoothing::upload(plan, a)?;','dev.DeviceSmoothing::upload',C)
ins(d,'let mut p = DistBsr::zeros_on(plan.p_pattern().clone(), &device)?;','dev.p_zeros',C)
ins(d,"// `P`'s views gathered on the device",'dev.smoothing_numeric_synced',C,before=True)
ins(d,'let mut galerkin = GalerkinPlan::new(a, &graph, &p, &coarse_serial_ids)?;','dev.GalerkinPlan::new',C)
ins(d,'let (plan, p_ext) = galerkin.plan_for(a, &p)?;','dev.plan_for',C)
ins(d,'let pt = DistTranspose::new(&p)?;','dev.DistTranspose::new',C)
ins(d,'since = phase(&mut tm.galerkin_symbolic_s, since)?;','dev.sym_sync',C)
ins(d,'let mut device_galerkin = DeviceGalerkin::upload_for_product(plan, p_ext, &device)?;','dev.DeviceGalerkin::upload',C)
ins(d,'let mut next = DistBsr::zeros_on(plan.coarse_pattern().clone(), &device)?;','dev.next_zeros',C)
ins(d,'drop(graph);','dev.drop_graph',C)
ins(d,'phase(&mut tm.galerkin_numeric_s, since)?;','dev.galerkin_numeric',C)
c='amg/src/dist_cycle.rs'
A='fn aggregate('
ins(c,'let bs = a.pattern().block_size();','reset()',A,before=True)
ins(c,'let distance','agg.strength',A,before=True)
ins(c,'Ok(Aggregated','agg.aggregate',A,before=True)
T='fn tentative_level('
ins(c,'let fine = a.pattern().partition().clone();','reset()',T,before=True)
ins(c,'let coarse_rows','tent.tentative',T,before=True)
p='amg/src/dist_prolongator.rs'
V='fn p_view('
ins(p,'let plan = RowGatherPlan::new(ap.halo(), p)?;','pv.RowGatherPlan::new',V)
ins(p,'plan.update(p, &mut p_oth)?;','pv.p_oth_update',V)
ins(p,'    let needed: Vec<u64>','pv.mark_columns',V,before=True)
ins(p,'let answers = comm.alltoallv_u64(&replies)?;','pv.serial_ids_exchange',V)
ins(p,'by_serial.par_sort_unstable();','pv.by_serial_sort',V)
ins(p,'let n_cols = by_serial.len();','pv.local_col',V)
ins(p,'        position[v as usize] = i as u32;\n    }','pv.position',V)
ins(p,'    let ext_col: Vec<u32>','pv.ext_entries',V,before=True)
ins(p,'    let ext_pattern = BlockPattern::new','pv.owned_cols',V,before=True)
ins(p,'let owned_pattern = BlockPattern::new(n, n_cols, owned_ptr, owned_col)?;','pv.patterns',V)
ins(p,'    view.fill_values(p)?;','pv.zeros',V,before=True)
ins(p,'    view.fill_values(p)?;','pv.fill',V)
S='pub fn new(a: &DistBsr, g: &DistGraph, t: &DistTentative)'
ins(p,'let view = p_view(a, &g.serial_ids, &t.p, &t.coarse_serial_ids)?;','sp.p_view',S)
ins(p,'let a_local = ALocal::new(a, &view.position)?;','sp.ALocal',S)
ins(p,'let wp = product.pattern();','sp.symbolic_product',S,before=True)
ins(p,'let pp = t.p.pattern();','sp.cols',S,before=True)
ins(p,'            &cols,\n        )?;','sp.new_rect',S)
ins(p,'let p_from_product = p_pattern.slot_entries().to_vec();','sp.slot_entries',S)
R='fn refresh(&mut self, a: &DistBsr, p: &DistBsr, symbolic: bool)'
ins(p,'let sent = self.view.plan.update(p, &mut self.view.p_oth)?;','gp.update',R)
ins(p,'            .map_err(linalg::LinalgError::from)?;','gp.allreduce',R)
ins(p,'            self.a_local = Some(a_local.clone());','gp.a_local',R)
ins(p,'Ok(sent)','gp.GalerkinProductPlan::new',R,before=True)
g='amg/src/dist_galerkin.rs'
G='        a_local: ALocal,\n        p_ext: &Bsr,'
ins(g,'let ap_plan = symbolic_product(&device, &a_pattern, p_ext.pattern())?;','gpp.ap_symbolic',G)
ins(g,'let pt_plan = TransposePlan::new(p_owned.pattern());','gpp.TransposePlan::new',G)
ins(g,'linalg::transpose_numeric(&pt_plan, p_owned, &mut pt)?;','gpp.pt_numeric',G)
ins(g,'let partial_plan = symbolic_product(&device, pt.pattern(), ap_plan.pattern())?;','gpp.partial_symbolic',G)
ins(g,'reduction_symbolic(partial_pattern, coarse_globals, coarse, k)?;','gpp.reduction',G)
ins(g,'let split = reduction.split(coarse.comm().rank(), partial_pattern.nnz())?;','gpp.split',G)
# call 2 also had these marks (inserted after the lines above ran; the same `ins` with before= for the last ones):
#   dist_aggregation.rs: agg.mis after `let roots = dist_mis(g, distance)?;`, agg.first_pass before `let mut pending: Vec<u32>`
#   dist_tentative.rs: tn.directory_rounds, tn.round3_rows, tn.members_sort, tn.groups, tn.qr, tn.round4, tn.records,
#   tn.new_rect, tn.from_values after/before the rounds of dist_tentative_planned (see its round comments)
