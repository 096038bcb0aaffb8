#!/usr/bin/python3
"""A hostile ONVIF camera: LiveRelay resolves `onvif://` sources through it (GetCapabilities,
GetProfiles, GetStreamUri, GetSnapshotUri) and steers it (GetStatus, GetPresets, ContinuousMove,
Stop, GotoPreset, SetPreset). Each request is one exchange: a plausible SOAP answer for the
call, mutated from a seed -- XML broken (truncated, undeclared prefixes, non-UTF-8, a DTD with
entity bombs or external entities, 100,000 levels deep, 5 MB, 50,000 profiles), values at
their extremes (sizes, velocities, URIs with control characters, on other hosts, 70,000 bytes
long), faults with huge reasons -- or the HTTP around it (http_answers.py: statuses, lying
lengths, chunking, resets, slow drips). One line per exchange, so a crash replays by seed:

    onvif_camera.py --port P --seed 7 --exchanges 10000 [--rtsp-port R] [--mutate 0.6]

With --wsd, it also answers WS-Discovery probes on UDP 3702 (run it in a network namespace
of its own) with floods: hundreds of matches per probe, forged RelatesTo, XAddrs on other hosts
and schemes, huge and broken datagrams.
"""
import os, random, re, socket, sys, threading
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_answers, peer

a = peer.arguments(extra=[("--mutate", dict(type=float, default=0.6, help="share of answers broken")),
                          ("--rtsp-port", dict(type=int, default=1, help="where stream URIs point")),
                          ("--wsd", dict(action="store_true", help="answer WS-Discovery on UDP 3702 too"))])

ENV = ('<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" '
       'xmlns:tt="http://www.onvif.org/ver10/schema" xmlns:trt="http://www.onvif.org/ver10/media/wsdl" '
       'xmlns:tds="http://www.onvif.org/ver10/device/wsdl" xmlns:tptz="http://www.onvif.org/ver20/ptz/wsdl">'
       '<s:Body>{}</s:Body></s:Envelope>')
EXTREMES = ["", "0", "-1", "65536", "2147483648", "99999999999999999999999", "1e400", "-1e400", "nan", "inf", "0x10", " 7 ", "é", "\u0000"]


def profile(token, name, w, h, fps, ptz):
    return (f'<trt:Profiles token="{token}"><tt:Name>{name}</tt:Name><tt:VideoEncoderConfiguration token="v{token}">'
            f'<tt:Encoding>H264</tt:Encoding><tt:Resolution><tt:Width>{w}</tt:Width><tt:Height>{h}</tt:Height></tt:Resolution>'
            f'<tt:RateControl><tt:FrameRateLimit>{fps}</tt:FrameRateLimit></tt:RateControl></tt:VideoEncoderConfiguration>'
            + ('<tt:PTZConfiguration token="ptz"/>' if ptz else "") + '</trt:Profiles>')


def plausible(call, r, what):
    """The answer a camera would give to `call`, its values sometimes at their extremes."""
    x = lambda v: r.choice(EXTREMES) if r.random() < 0.15 else v
    host = "127.0.0.1"
    if r.random() < 0.1:
        host = r.choice(["10.9.9.9", "evil.example", "[::1]", "a" * 300, "127.0.0.1:99999"]); what.append(f"host {host[:20]}")
    port = a.port
    if call == "GetCapabilities":
        return (f'<tds:GetCapabilitiesResponse><tds:Capabilities><tt:Media><tt:XAddr>{x(f"http://{host}:{port}/onvif/media_service")}</tt:XAddr></tt:Media>'
                f'<tt:PTZ><tt:XAddr>{x(f"http://{host}:{port}/onvif/ptz_service")}</tt:XAddr></tt:PTZ></tds:Capabilities></tds:GetCapabilitiesResponse>')
    if call == "GetProfiles":
        n = r.choice([0, 1, 2, 2, 2, 3, 64, 500]) if r.random() < 0.3 else 2
        if n != 2: what.append(f"{n} profiles")
        ps = [profile(x("Main"), x("MainStream"), x("640"), x("360"), x("30"), True), profile(x("Sub"), "SubStream", x("320"), x("180"), x("30"), r.random() < 0.5)]
        ps += [profile(f"p{i}", f"P{i}", r.randint(1, 5000), r.randint(1, 5000), 30, False) for i in range(max(0, n - 2))]
        return "<trt:GetProfilesResponse>" + "".join(ps[:n]) + "</trt:GetProfilesResponse>"
    if call in ("GetStreamUri", "GetSnapshotUri"):
        uri = f"rtsp://{host}:{a.rtsp_port}/main" if call == "GetStreamUri" else f"http://{host}:{port}/snapshot.jpg"
        if r.random() < 0.2:
            uri = r.choice(["", "rtsp://", "rtsp://a b/", "rtsp://x/\x01", "file:///etc/passwd", "rtsp://u:p@127.0.0.1:1/x", "rtsp://" + "a" * 70000, "srt://127.0.0.1:1"])
            what.append(f"uri {uri[:30]!r}")
        return f'<trt:{call}Response><trt:MediaUri><tt:Uri>{uri}</tt:Uri><tt:Timeout>PT0S</tt:Timeout></trt:MediaUri></trt:{call}Response>'
    if call == "GetStatus":
        return (f'<ptz:GetStatusResponse><ptz:PTZStatus><tt:Position><tt:PanTilt x="{x("0.5")}" y="{x("-0.5")}"/><tt:Zoom x="{x("0")}"/></tt:Position>'
                '<tt:MoveStatus><tt:PanTilt>{{pan_tilt_status}}</tt:PanTilt></tt:MoveStatus><tt:UtcTime>{{utc_time}}</tt:UtcTime></ptz:PTZStatus></ptz:GetStatusResponse>')
    if call == "GetPresets":
        n = r.choice([0, 1, 3, 300, 5000]) if r.random() < 0.3 else 2
        return "<tptz:GetPresetsResponse>" + "".join(
            f'<tptz:Preset token="{x(str(i))}"><tt:Name>{x("P" + str(i))}</tt:Name><tt:PTZPosition><tt:PanTilt x="{x("0.1")}" y="0"/></tt:PTZPosition></tptz:Preset>'
            for i in range(n)) + "</tptz:GetPresetsResponse>"
    if call == "SetPreset":
        return f"<tptz:SetPresetResponse><tptz:PresetToken>{x('t1')}</tptz:PresetToken></tptz:SetPresetResponse>"
    if call == "GetSystemDateAndTime":
        return (f"<tds:GetSystemDateAndTimeResponse><tds:SystemDateAndTime><tt:UTCDateTime><tt:Time><tt:Hour>{x('1')}</tt:Hour><tt:Minute>{x('2')}</tt:Minute>"
                f"<tt:Second>{x('3')}</tt:Second></tt:Time><tt:Date><tt:Year>{x('2031')}</tt:Year><tt:Month>{x('1')}</tt:Month><tt:Day>{x('1')}</tt:Day></tt:Date>"
                "</tt:UTCDateTime></tds:SystemDateAndTime></tds:GetSystemDateAndTimeResponse>")
    return f"<tptz:{call}Response/>"


def broken(doc, r, what):
    """The document broken in one of the ways XML can be."""
    k = r.randrange(14)
    if k == 0:
        what.append("truncated"); return doc[:r.randrange(len(doc) + 1)]
    if k == 1:
        what.append("entity bomb"); return ('<?xml version="1.0"?><!DOCTYPE s:Envelope [<!ENTITY a "aaaaaaaaaa">' + "".join(
            f'<!ENTITY {c} "{("&" + p + ";") * 10}">' for p, c in zip("abcdefgh", "bcdefghi")) + ']>') + doc.replace("<s:Body>", "<s:Body>&i;", 1).split("?>", 1)[-1]
    if k == 2:
        what.append("external entity"); return '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>' + doc.split("?>", 1)[-1].replace("<tt:Name>", "<tt:Name>&e;")
    if k == 3:
        n = r.choice([300, 100000]); what.append(f"{n} levels deep"); return doc.replace("<s:Body>", "<s:Body>" + "<a>" * n, 1)
    if k == 4:
        what.append("5 MB"); return doc.replace("</s:Body>", "<pad>" + "x" * (5 << 20) + "</pad></s:Body>")
    if k == 5:
        what.append("50000 elements"); return doc.replace("</s:Body>", "<b/>" * 50000 + "</s:Body>")
    if k == 6:
        what.append("non-UTF-8"); return doc.replace("Main", "M\udcff\udcfe", 1)
    if k == 7:
        what.append("prefixes undeclared"); return re.sub(r' xmlns:\w+="[^"]*"', "", doc)
    if k == 8:
        what.append("no envelope"); return doc.split("<s:Body>", 1)[-1]
    if k == 9:
        what.append("fault, huge reason"); return ENV.format('<s:Fault><s:Code><s:Value>s:Sender</s:Value><s:Subcode><s:Value>ter:NotAuthorized</s:Value>'
                                                              '</s:Subcode></s:Code><s:Reason><s:Text>' + "r\u0007\u202e" * 30000 + '</s:Text></s:Reason></s:Fault>')
    if k == 10:
        what.append("empty body"); return ENV.format("")
    if k == 11:
        what.append("bytes mutated")
        b = bytearray(doc.encode("utf-8", "surrogateescape"))
        for _ in range(r.randint(1, 20)):
            if b: b[r.randrange(len(b))] = r.randrange(256)
        return b.decode("utf-8", "surrogateescape")
    if k == 12:
        what.append("two roots"); return doc + doc
    what.append("attribute flood"); return doc.replace("<s:Body>", "<s:Body " + " ".join(f'a{i}="{i}"' for i in range(20000)) + ">", 1)


def exchange(conn, r, n, what):
    method, path, body = http_answers.read_request(conn)
    call = re.search(rb"<(?:\w+:)?(Get\w+|ContinuousMove|Stop|GotoPreset|SetPreset)\b", body or b"")
    call = call.group(1).decode() if call else "?"
    what.append(f"{method} {path} {call}")
    if method is None:
        conn.close(); return
    doc = ENV.format(plausible(call, r, what))
    if r.random() < a.mutate:
        doc = broken(doc, r, what)
    data = doc.encode("utf-8", "surrogateescape")
    if r.random() < a.mutate * 0.5:
        http_answers.answer(conn, r, data, what, content_type="application/soap+xml", port=a.port)
    else:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/soap+xml\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(data) + data)
        conn.close()


def discovery():
    """Answers every probe with a flood: forged and real RelatesTo, other hosts, broken datagrams."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 3702))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton("239.255.255.250") + socket.inet_aton("127.0.0.1"))
    k = 0
    while True:
        data, addr = s.recvfrom(65535)
        m = re.search(rb"MessageID>([^<]*)<", data)
        if not m or b"ProbeMatch" in data: continue
        k += 1
        try: flood(s, addr, m.group(1).decode("latin-1"), random.Random(f"{a.seed}:wsd:{k}"))
        except Exception as e: print(f"probe {k}: the flood stopped: {e!r}", flush=True)
        print(f"probe {k} answered", flush=True)


def flood(s, addr, mid, r):
    """One probe's answers: 1, 50 or 600 datagrams of 1 or 40 matches each. One of the first
    eight is a genuine match, so a listener that drops the good with the bad is seen (later, a
    receive buffer capped by net.core.rmem_max may overflow first)."""
    n = r.choice([1, 50, 600])
    genuine = r.randrange(min(n, 8))
    for i in range(n):
        relates = mid if r.random() < 0.5 else r.choice(["urn:uuid:other", "", mid + "x", "\xff"])
        xaddr = r.choice([f"http://127.0.0.1:{a.port}/onvif/device_service", "http://10.66.66.66/onvif/device_service",
                          "ftp://127.0.0.1/", "http://" + "h" * 600 + "/", "http://127.0.0.1:70000/", ""])
        if i == genuine: relates, xaddr = mid, f"http://127.0.0.1:{a.port}/onvif/device_service"
        doc = (f'<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing" '
               f'xmlns:d="http://schemas.xmlsoap.org/ws/2005/04/discovery"><s:Header><a:RelatesTo>{relates}</a:RelatesTo></s:Header><s:Body><d:ProbeMatches>'
               + f'<d:ProbeMatch><a:EndpointReference><a:Address>urn:uuid:cam{i}</a:Address></a:EndpointReference><d:Scopes>onvif://www.onvif.org/name/%ff%zz'
               f'</d:Scopes><d:XAddrs>{xaddr}</d:XAddrs></d:ProbeMatch>' * r.choice([1, 1, 40]) + '</d:ProbeMatches></s:Body></s:Envelope>')
        payload = doc.encode("utf-8", "surrogateescape")
        if r.random() < 0.2 and i != genuine: payload = broken(doc, r, []).encode("utf-8", "surrogateescape")[:65000]
        try: s.sendto(payload[:65000], addr)
        except OSError: pass


if a.wsd:
    threading.Thread(target=discovery, daemon=True).start()
http_answers.accept_exchanges(a, exchange)
