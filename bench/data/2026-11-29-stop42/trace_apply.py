# A measurement aid, never committed to the code (stop 42, calls 1-2): run from the checkout's root;
# wraps set-up phases in crate::trace::t (prints "TRACE name secs" with HEXFEM_TRACE set)
import re, shutil
shutil.copy('bench/data/2026-11-29-stop42/trace.rs.txt', 'amg/src/trace.rs')  # run from the checkout's root
T='crate::trace::t'
def wrap(path, pattern, name):
    """pattern: a regex matching `let X = EXPR?;` ... we wrap EXPR"""
    s=open(path).read()
    m=re.search(pattern, s, re.S)
    if not m:
        print("MISSING", path, name); return
    expr=m.group('e')
    new=m.group(0).replace(expr, T+'("'+name+'", || '+expr+')',1)
    s=s[:m.start()]+new+s[m.end():]
    open(path,'w').write(s)
lib='amg/src/lib.rs'
s=open(lib).read()
if 'mod trace' not in s:
    s=s.replace('pub mod aggregation;','pub(crate) mod trace;\npub mod aggregation;',1); open(lib,'w').write(s)
d='amg/src/dist_cycle/device.rs'
wrap(d, r'let emax = (?P<e>dist_emax\(a, &pbj, near_null, params, level\))\?;', 'dev.emax')
wrap(d, r'Some\((?P<e>SmoothingPlan::new\(a, &graph, &t\))\?\)', 'dev.SmoothingPlan::new')
wrap(d, r'let mut on_device = (?P<e>DeviceSmoothing::upload\(plan, a\))\?;', 'dev.DeviceSmoothing::upload')
wrap(d, r'let w = (?P<e>on_device\.numeric\(a, plan\.p0_view\(\), pbj\.inverse\(\), omega, &mut p\))\?;', 'dev.smoothing_numeric_download')
wrap(d, r'let p_host = (?P<e>DistBsr::from_values\(plan\.p_pattern\(\)\.clone\(\), &w\))\?;', 'dev.p_host')
wrap(d, r'let mut galerkin = (?P<e>GalerkinPlan::new\(a, &graph, &p_host, &coarse_serial_ids\))\?;', 'dev.GalerkinPlan::new')
wrap(d, r'let \(plan, p_ext\) = (?P<e>galerkin\.plan_for\(a, &p_host\))\?;', 'dev.plan_for')
wrap(d, r'let pt = (?P<e>DistTranspose::new\(&p_host\))\?;', 'dev.DistTranspose::new')
wrap(d, r'let mut device_galerkin = (?P<e>DeviceGalerkin::upload_for_product\(plan, p_ext, &device\))\?;', 'dev.DeviceGalerkin::upload')
wrap(d, r'let pt = (?P<e>pt\.to_device\(&device\))\?;', 'dev.pt.to_device')
wrap(d, r'(?P<e>device_galerkin\.numeric\(a, &mut next\))\?;', 'dev.galerkin_numeric')
c='amg/src/dist_cycle.rs'
wrap(c, r'(?P<e>dist_aggregate\(&graph, distance, bs, near_null\.k\))', 'aggregate')
wrap(c, r'(?P<e>dist_strength_graph\(a, params\.strength_threshold, &near_null\.serial_ids\))', 'strength')
wrap(c, r'(?P<e>dist_tentative_planned\(&g, &labels, &near_null\.rows, bs, k, &fine\))', 'tentative')
p='amg/src/dist_prolongator.rs'
wrap(p, r'let view = (?P<e>p_view\(a, g, &t\.p, &t\.coarse_serial_ids\))\?;', 'sp.p_view')
wrap(p, r'let a_local = (?P<e>ALocal::new\(a, &view\.position\))\?;', 'sp.a_local')
wrap(p, r'let \(p_ext, ext_sources\) = (?P<e>p_matrix\(&order\))\?;', 'pv.p_ext')
wrap(p, r'let \(p_owned, owned_sources\) = (?P<e>p_matrix\(&owned\))\?;', 'pv.p_owned')
wrap(p, r'let product = (?P<e>crate::dist_galerkin::symbolic_product\(.*?\))\?;', 'sp.symbolic_product')
g='amg/src/dist_galerkin.rs'
wrap(g, r'let ap_plan = (?P<e>symbolic_product\(&device, &a_pattern, p_ext\.pattern\(\)\))\?;', 'gpp.ap_symbolic')
wrap(g, r'let partial_plan = (?P<e>symbolic_product\(&device, pt\.pattern\(\), ap_plan\.pattern\(\)\))\?;', 'gpp.partial_symbolic')
wrap(g, r'let \(reduction, coarse_pattern\) =\s*(?P<e>reduction_symbolic\(partial_pattern, coarse_globals, coarse, k\))\?;', 'gpp.reduction')
