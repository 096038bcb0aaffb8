internal import CXML2

/// One element of an XML document a peer sent (an ONVIF camera's SOAP answer, a WS-Discovery
/// match), copied out of libxml2 into Swift values: names compared by their local part, so a
/// camera's prefixes (declared or not) do not matter.
public struct XMLElement: Sendable, Equatable {
    /// The local name: `GetProfilesResponse` for `trt:GetProfilesResponse`, also when the
    /// prefix was never declared (some cameras' PTZ answers).
    public let name: String
    /// The namespace URI, nil when none was declared.
    public let namespace: String?
    /// Attributes by local name.
    public let attributes: [String: String]
    /// The element's own text (its text and CDATA children joined), untrimmed.
    public let text: String
    public let children: [XMLElement]

    public init(name: String, namespace: String? = nil, attributes: [String: String] = [:], text: String = "", children: [XMLElement] = []) {
        self.name = name
        self.namespace = namespace
        self.attributes = attributes
        self.text = text
        self.children = children
    }

    /// The first child of this local name.
    public func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }

    /// Every child of this local name.
    public func children(_ name: String) -> [XMLElement] { children.filter { $0.name == name } }

    /// The child reached by following local names, one level each.
    public func path(_ names: String...) -> XMLElement? {
        var at = self
        for n in names {
            guard let next = at.child(n) else { return nil }
            at = next
        }
        return at
    }

    /// The first element of this local name at any depth below (depth first, this one excluded).
    public func descendant(_ name: String) -> XMLElement? {
        for c in children {
            if c.name == name { return c }
            if let d = c.descendant(name) { return d }
        }
        return nil
    }

    /// The text without surrounding spaces and line breaks.
    public var value: String { String(text.trimmingASCIISpaces()) }
}

/// Why a peer's bytes are not taken as an XML document; one line, printable, no peer text
/// beyond what libxml2 quotes (cut short).
public enum XMLTreeError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLarge(limit: Int)
    case malformed(String)
    /// SOAP forbids a DTD (SOAP 1.2 part 1, §5), and with it every entity trick.
    case documentType
    case tooManyElements(limit: Int)

    public var description: String {
        switch self {
        case .tooLarge(let l): "XML larger than \(l) bytes"
        case .malformed(let m): "malformed XML: \(m)"
        case .documentType: "XML with a document type declaration (refused)"
        case .tooManyElements(let l): "XML with more than \(l) elements"
        }
    }
}

/// libxml2 behind a Swift tree: no network, no DTD loading, no entity substitution, libxml2's
/// own depth limit (256) and entity-amplification checks, and the size and element count
/// capped here. A document with a DOCTYPE is refused.
public enum XMLTree {
    public static let defaultMaxBytes = 1 << 20
    public static let defaultMaxElements = 20_000

    private static let initialized: Bool = {
        xmlInitParser()
        return true
    }()

    public static func parse(_ bytes: [UInt8], maxBytes: Int = defaultMaxBytes, maxElements: Int = defaultMaxElements) -> Result<XMLElement, XMLTreeError> {
        guard bytes.count <= maxBytes else { return .failure(.tooLarge(limit: maxBytes)) }
        guard !bytes.isEmpty else { return .failure(.malformed("empty")) }
        _ = initialized
        guard let context = xmlNewParserCtxt() else { return .failure(.malformed("no parser")) }
        defer { xmlFreeParserCtxt(context) }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOCDATA.rawValue)
        let document: xmlDocPtr? = bytes.withUnsafeBufferPointer { b in
            b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) {
                xmlCtxtReadMemory(context, $0, Int32(b.count), "peer.xml", nil, options)
            }
        }
        guard let document else {
            return .failure(.malformed(lastError(context)))
        }
        defer { xmlFreeDoc(document) }
        if document.pointee.intSubset != nil || document.pointee.extSubset != nil { return .failure(.documentType) }
        guard let root = xmlDocGetRootElement(document) else { return .failure(.malformed("no root element")) }
        var budget = maxElements
        guard let tree = element(root, budget: &budget) else { return .failure(.tooManyElements(limit: maxElements)) }
        return .success(tree)
    }

    private static func lastError(_ context: xmlParserCtxtPtr) -> String {
        let e = context.pointee.lastError
        guard let m = e.message else { return "not well-formed" }
        let text = String(cString: m).utf8.prefix(160).map { $0 >= 0x20 && $0 < 0x7F ? Character(UnicodeScalar($0)) : " " }
        return "\(String(text).trimmingASCIISpaces()) (line \(e.line))"
    }

    private static func string(_ p: UnsafePointer<xmlChar>?) -> String {
        guard let p else { return "" }
        return String(decoding: UnsafeBufferPointer(start: p, count: strlen(p)), as: UTF8.self)
    }

    private static func strlen(_ p: UnsafePointer<xmlChar>) -> Int {
        var n = 0
        while p[n] != 0 { n += 1 }
        return n
    }

    private static func localName(_ node: xmlNodePtr) -> String {
        let full = string(node.pointee.name)
        // An undeclared prefix stays in libxml2's name ("ptz:Preset" with no namespace).
        if node.pointee.ns == nil, let colon = full.utf8.lastIndex(of: 0x3A) { return String(full[full.utf8.index(after: colon)...]) }
        return full
    }

    private static func element(_ node: xmlNodePtr, budget: inout Int) -> XMLElement? {
        budget -= 1
        guard budget >= 0 else { return nil }
        var attributes: [String: String] = [:]
        var a = node.pointee.properties
        while let attribute = a {
            var value = ""
            var v = attribute.pointee.children
            while let t = v {
                value += string(t.pointee.content)
                v = t.pointee.next
            }
            var name = string(attribute.pointee.name)
            if attribute.pointee.ns == nil, let colon = name.utf8.lastIndex(of: 0x3A) { name = String(name[name.utf8.index(after: colon)...]) }
            attributes[name] = value
            a = attribute.pointee.next
        }
        var text = ""
        var children: [XMLElement] = []
        var c = node.pointee.children
        while let child = c {
            switch child.pointee.type {
            case XML_ELEMENT_NODE:
                guard let e = element(child, budget: &budget) else { return nil }
                children.append(e)
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                text += string(child.pointee.content)
            default:
                break
            }
            c = child.pointee.next
        }
        let namespace = node.pointee.ns.map { string($0.pointee.href) }
        return XMLElement(name: localName(node), namespace: namespace, attributes: attributes, text: text, children: children)
    }
}

extension String {
    /// This text escaped for an XML element's text or a quoted attribute.
    public var xmlEscaped: String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for ch in unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default:
                // XML 1.0 has no way to carry other control characters.
                if ch.value < 0x20 && ch != "\t" && ch != "\n" && ch != "\r" { continue }
                out.unicodeScalars.append(ch)
            }
        }
        return out
    }
}
