#!/usr/bin/python3
"""Fails on the forms that let a peer's bytes stop the process, anywhere in the product's sources.

A camera, a publisher, a browser and a config file are all adversaries to the parser (STYLE.md,
"Parsing what peers send"). Forbidden in Sources/ (the measurement and fuzzing targets and the
command line aside, whose input is the operator's own):
  - Foundation text search and trimming (range(of:), contains("…"), replacingOccurrences,
    components(separatedBy:), trimmingCharacters, caseInsensitiveCompare): use Wire's utf8Range,
    utf8Contains, replacingAll, trimmingASCIISpaces, equalsIgnoringCase;
  - a subscript straight on a split result: use Wire's field(_:separator:) or check the count;
  - a floating-point value turned into an integer with a trapping initializer: use
    Int64(saturating:), PeerNumber.nanoseconds, Timestamps.nanoseconds;
  - URLSession (FoundationNetworking stops the process on some answers: "Transfer completed,
    but there's no response"): use Relay's BoundedHTTP (AsyncHTTPClient, bounded).
There is no comment that silences a line: change the code. Exit 1 and one line per finding.
"""
import pathlib, re, sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SKIP = {"Bench", "StampedSource", "Fuzz", "liverelay"}
RULES = [
    ("Foundation text search", re.compile(r"\.range\(of:|\.ranges\(of:|replacingOccurrences\(|components\(separatedBy|"
                                          r"\bcontains\(\"[^\"]{2,}|trimmingCharacters\(in:|caseInsensitiveCompare|"
                                          r"localizedCaseInsensitiveContains|localizedStandardContains")),
    ("subscript on a split result", re.compile(r"(split|components)\([^()]*(\([^()]*\)[^()]*)*\)\s*\[")),
    ("trapping float-to-integer conversion",
     re.compile(r"\b(U?Int(8|16|32|64)?)\((?!exactly:|saturating:|clamping:|truncatingIfNeeded:|bitPattern:)"
                r"[^\n]*?((?<![$\w])\d+\.\d|\d[eE]\d|Double\(|\.rounded\(|\.rounded\b)")),
    ("URLSession on a peer's answers", re.compile(r"\bURLSession\b|\bimport FoundationNetworking\b")),
]

BAD = ['if let r = url.range(of: "://") {', 'if text.contains("#EXT-X-ENDLIST") {', 's.replacingOccurrences(of: ";", with: ",")',
       'let v = t.split(separator: "=")[1]', 'let v = t.split(separator: "=", maxSplits: 1)[1]', 'keepalive = UInt64(secs / 2 * 1e9)',
       'let ms = Int64((1000 / rate).rounded())', 'let n = Int(Double(x) * 2)', 'let s = h.trimmingCharacters(in: .whitespaces)',
       'let task = URLSession.shared.dataTask(with: request)', 'import FoundationNetworking']
GOOD = ['if let r = url.utf8Range(of: "://") {', 'let v = t.field(1, separator: "=")', 'keepalive = PeerNumber.nanoseconds(secs / 2)',
        'let ms = Int64(saturating: (1000 / rate).rounded())', 'let n = headers.first.flatMap { Int($0.1) }', 'let c = set.contains(name)']

def selftest():
    for line in BAD:
        assert any(rx.search(line) for _, rx in RULES), "not caught: " + line
    for line in GOOD:
        assert not any(rx.search(line) for _, rx in RULES), "false finding: " + line

def main():
    selftest()
    findings = []
    for path in sorted((ROOT / "Sources").rglob("*.swift")):
        if path.relative_to(ROOT / "Sources").parts[0] in SKIP:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//", 1)[0] if "\"" not in line else line
            if code.lstrip().startswith("//"):
                continue
            for name, rx in RULES:
                if rx.search(code):
                    findings.append(f"{path.relative_to(ROOT)}:{n}: {name}: {line.strip()}")
    for f in findings:
        print(f)
    if findings:
        print(f"check_peer_input: {len(findings)} finding(s); see scripts/check_peer_input.py for the safe forms", file=sys.stderr)
        return 1
    print("check_peer_input: no trapping or Foundation-search forms in the product's sources")
    return 0

if __name__ == "__main__":
    sys.exit(main())
