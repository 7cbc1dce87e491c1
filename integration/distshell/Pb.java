// Pb is just enough of the protocol buffers wire format (proto2) for
// DistShellAM: a writer that appends fields, and a reader that decodes a
// message into its fields by number. No protobuf library is used; the
// field numbers come from YARN's and Hadoop's published .proto files.
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

final class Pb {
  private Pb() {}

  static final int VARINT = 0;
  static final int FIXED64 = 1;
  static final int BYTES = 2;
  static final int FIXED32 = 5;

  /** Writer appends fields of one message. */
  static final class Writer {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    private void tag(int field, int wireType) {
      rawVarint(out, ((long) field << 3) | wireType);
    }

    /** int32, int64, uint32, uint64, enum: negative int32s take ten bytes, as proto2 says. */
    Writer int64(int field, long v) {
      tag(field, VARINT);
      rawVarint(out, v);
      return this;
    }

    Writer int32(int field, int v) {
      return int64(field, v);
    }

    Writer sint32(int field, int v) {
      tag(field, VARINT);
      rawVarint(out, ((v << 1) ^ (v >> 31)) & 0xffffffffL);
      return this;
    }

    Writer bool(int field, boolean v) {
      return int64(field, v ? 1 : 0);
    }

    Writer float32(int field, float v) {
      tag(field, FIXED32);
      int bits = Float.floatToIntBits(v);
      for (int i = 0; i < 4; i++) {
        out.write(bits >>> (8 * i));
      }
      return this;
    }

    Writer bytes(int field, byte[] v) {
      tag(field, BYTES);
      rawVarint(out, v.length);
      out.write(v, 0, v.length);
      return this;
    }

    Writer string(int field, String v) {
      return bytes(field, v.getBytes(StandardCharsets.UTF_8));
    }

    Writer message(int field, Writer m) {
      return bytes(field, m.toByteArray());
    }

    byte[] toByteArray() {
      return out.toByteArray();
    }
  }

  static void rawVarint(ByteArrayOutputStream out, long v) {
    while ((v & ~0x7fL) != 0) {
      out.write((int) ((v & 0x7f) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
  }

  /** delimited is m preceded by its varint length, as writeDelimitedTo writes it. */
  static byte[] delimited(byte[] m) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    rawVarint(out, m.length);
    out.write(m, 0, m.length);
    return out.toByteArray();
  }

  /** Cursor reads varints and delimited messages off a byte array. */
  static final class Cursor {
    final byte[] b;
    int pos;
    final int end;

    Cursor(byte[] b, int off, int len) {
      this.b = b;
      this.pos = off;
      this.end = off + len;
    }

    boolean more() {
      return pos < end;
    }

    long varint() throws IOException {
      long v = 0;
      for (int shift = 0; shift < 64; shift += 7) {
        if (pos >= end) {
          throw new IOException("protobuf: truncated varint");
        }
        int c = b[pos++] & 0xff;
        v |= (long) (c & 0x7f) << shift;
        if (c < 0x80) {
          return v;
        }
      }
      throw new IOException("protobuf: varint longer than 10 bytes");
    }

    byte[] take(long n) throws IOException {
      if (n < 0 || n > end - pos) {
        throw new IOException("protobuf: a field of " + n + " bytes with " + (end - pos) + " left");
      }
      byte[] v = new byte[(int) n];
      System.arraycopy(b, pos, v, 0, (int) n);
      pos += (int) n;
      return v;
    }

    /** delimited reads a varint length and that many bytes, as parseDelimitedFrom does. */
    byte[] delimited() throws IOException {
      return take(varint());
    }
  }

  /** Msg is a decoded message: every field's values, in order, by number. */
  static final class Msg {
    private final Map<Integer, List<Object>> fields = new HashMap<>();

    static Msg parse(byte[] b) throws IOException {
      return parse(b, 0, b.length);
    }

    static Msg parse(byte[] b, int off, int len) throws IOException {
      Msg m = new Msg();
      Cursor c = new Cursor(b, off, len);
      while (c.more()) {
        long key = c.varint();
        int field = (int) (key >>> 3);
        int type = (int) (key & 7);
        if (field <= 0) {
          throw new IOException("protobuf: field number " + field);
        }
        Object v;
        switch (type) {
          case VARINT:
            v = c.varint();
            break;
          case FIXED64: {
            byte[] x = c.take(8);
            long l = 0;
            for (int i = 7; i >= 0; i--) {
              l = (l << 8) | (x[i] & 0xff);
            }
            v = l;
            break;
          }
          case BYTES:
            v = c.delimited();
            break;
          case FIXED32: {
            byte[] x = c.take(4);
            int i32 = 0;
            for (int i = 3; i >= 0; i--) {
              i32 = (i32 << 8) | (x[i] & 0xff);
            }
            v = i32;
            break;
          }
          default:
            throw new IOException("protobuf: wire type " + type + " of field " + field + " is not supported");
        }
        m.fields.computeIfAbsent(field, k -> new ArrayList<>()).add(v);
      }
      return m;
    }

    boolean has(int field) {
      return fields.containsKey(field);
    }

    private Object last(int field) {
      List<Object> vs = fields.get(field);
      return vs == null ? null : vs.get(vs.size() - 1);
    }

    private <T> T typed(int field, Class<T> want) throws IOException {
      Object v = last(field);
      if (v == null) {
        return null;
      }
      if (!want.isInstance(v)) {
        throw new IOException("protobuf: field " + field + " has the wrong wire type");
      }
      return want.cast(v);
    }

    long int64(int field, long dflt) throws IOException {
      Long v = typed(field, Long.class);
      return v == null ? dflt : v;
    }

    int int32(int field, int dflt) throws IOException {
      return (int) int64(field, dflt);
    }

    boolean bool(int field, boolean dflt) throws IOException {
      return int64(field, dflt ? 1 : 0) != 0;
    }

    byte[] bytes(int field) throws IOException {
      byte[] v = typed(field, byte[].class);
      return v == null ? new byte[0] : v;
    }

    String string(int field, String dflt) throws IOException {
      byte[] v = typed(field, byte[].class);
      return v == null ? dflt : new String(v, StandardCharsets.UTF_8);
    }

    /** message is the (last) embedded message in field, or an empty one. */
    Msg message(int field) throws IOException {
      return parse(bytes(field));
    }

    List<byte[]> bytesList(int field) throws IOException {
      List<Object> vs = fields.getOrDefault(field, Collections.emptyList());
      List<byte[]> out = new ArrayList<>();
      for (Object v : vs) {
        if (!(v instanceof byte[])) {
          throw new IOException("protobuf: field " + field + " has the wrong wire type");
        }
        out.add((byte[]) v);
      }
      return out;
    }

    List<Msg> messages(int field) throws IOException {
      List<Msg> out = new ArrayList<>();
      for (byte[] b : bytesList(field)) {
        out.add(parse(b));
      }
      return out;
    }
  }
}
