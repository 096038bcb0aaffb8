/// JSON strings written without Foundation: a log line or an event body holds text a peer
/// chose (a stream name, an error from a camera), escaped here so it can never end the string
/// or the line early.
public enum JSONText {
    /// `text` as a JSON string literal, quotes included: `"`, `\` and every control character
    /// escaped (U+2028/U+2029 too, which end a line for some JavaScript readers).
    public static func quoted(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = Array("0123456789abcdef")
                    let v = Int(scalar.value)
                    out += "\\u00" + String(hex[v >> 4]) + String(hex[v & 0xF])
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
