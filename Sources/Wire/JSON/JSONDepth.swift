/// How deeply a JSON text nests, read without parsing it: a document from a peer that nests
/// deeper than its format ever does (a JWKS is four levels) is refused before a decoder spends
/// seconds (or its stack) on it.
public enum JSONDepth {
    /// The deepest nesting of arrays and objects in `bytes`, stopping once past `limit`
    /// (returns limit + 1 then). Brackets inside strings do not count.
    public static func deepest(_ bytes: some Sequence<UInt8>, limit: Int) -> Int {
        var depth = 0, deepest = 0
        var inString = false, escaped = false
        for b in bytes {
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
                continue
            }
            switch b {
            case 0x22: inString = true
            case 0x5B, 0x7B:
                depth += 1
                if depth > deepest {
                    deepest = depth
                    if deepest > limit { return deepest }
                }
            case 0x5D, 0x7D: depth = max(0, depth - 1)
            default: break
            }
        }
        return deepest
    }
}
