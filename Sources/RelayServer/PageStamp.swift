/// The stamp of LiveRelay's test source read from a picture a page shows (a canvas, a video):
/// 16x7 cells over the top 7/28 of the picture (Sources/StampedSource/Stamp.swift), row 0 a
/// sync pattern, then 48 bits of capture ms, 32 bits of frame counter, CRC-16. The wall reads
/// it for its latency labels; the incident review for the stamps its tiles agree on.
enum PageStamp {
    static let javascript = #"""
    const SYNC = [1,0,1,0,1,1,0,0,1,1,1,1,0,0,0,0];
    const probe = document.createElement('canvas'); probe.width = 64; probe.height = 28;
    const pg = probe.getContext('2d', {willReadFrequently: true});
    function crc16(bits) { let c = 0xFFFF; for (const b of bits) { const top = (c & 0x8000) !== 0; c = (c << 1) & 0xFFFF; if (top !== (b === 1)) c ^= 0x1021; } return c; }
    function readStamp(src, w, h) {
      pg.drawImage(src, 0, 0, w, h * 7 / 28, 0, 0, 64, 28);
      const d = pg.getImageData(0, 0, 64, 28).data;
      const cells = [];
      for (let r = 0; r < 7; r++) for (let c = 0; c < 16; c++) {
        let sum = 0;
        for (const [dx, dy] of [[1,1],[2,1],[1,2],[2,2]]) { const i = ((r * 4 + dy) * 64 + c * 4 + dx) * 4; sum += 0.299 * d[i] + 0.587 * d[i+1] + 0.114 * d[i+2]; }
        cells.push(sum / 4 > 128 ? 1 : 0);
      }
      for (let i = 0; i < 16; i++) if (cells[i] !== SYNC[i]) return null;
      const p = cells.slice(16);
      let t = 0; for (let i = 0; i < 48; i++) t = t * 2 + p[i];
      let n = 0; for (let i = 48; i < 80; i++) n = n * 2 + p[i];
      let crc = 0; for (let i = 80; i < 96; i++) crc = crc * 2 + p[i];
      return crc16(p.slice(0, 80)) === crc ? {capture: t, frame: n} : null;
    }
    """#
}
