//! The hand-written `math.Exp` against Go's own results (Go 1.26.0, amd64),
//! both branches: `fixtures/ollama/go_exp_fma.jsonl` (AVX+FMA, the default on
//! current CPUs) and `go_exp_sse2.jsonl` (`GODEBUG=cpu.fma=off`).

use replicas::go::exp_amd64;
use serde_json::Value;

fn check(file: &str, fma: bool) -> (usize, usize) {
    let path = parity_core::fixture::bundled_dir()
        .expect("bundled fixtures")
        .join("ollama")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("recorded file");
    let (mut n, mut libm_differs) = (0, 0);
    for line in text.lines().skip(1) {
        let r: Value = serde_json::from_str(line).expect("json");
        let bits = |k: &str| u64::from_str_radix(r[k].as_str().expect("hex"), 16).expect("hex");
        let x = f64::from_bits(bits("x"));
        let want = bits("exp");
        let got = exp_amd64(x, fma);
        assert!(
            got.to_bits() == want || (got.is_nan() && f64::from_bits(want).is_nan()),
            "{file}: exp({x:e}) = {got:e}, Go {:e}",
            f64::from_bits(want)
        );
        if x.exp().to_bits() != want {
            libm_differs += 1;
        }
        n += 1;
    }
    (n, libm_differs)
}

#[test]
fn both_amd64_branches_match_go_bit_for_bit() {
    let (n, libm) = check("go_exp_fma.jsonl", true);
    assert!(n > 2000, "{n}");
    // the C library's exp is not Go's: the port is needed
    assert!(libm > 100, "{libm} of {n}");
    let (n, _) = check("go_exp_sse2.jsonl", false);
    assert!(n > 2000, "{n}");
}
