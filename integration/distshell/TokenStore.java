// TokenStore reads and writes Hadoop's token storage (the "HDTS" file a
// NodeManager writes at HADOOP_TOKEN_FILE_LOCATION, and the tokens of a
// ContainerLaunchContext), as org.apache.hadoop.security.Credentials
// does: the magic "HDTS", a format byte (0: Writables, Hadoop's default;
// 1: a varint-delimited CredentialsProto), then the tokens and secrets.
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

final class TokenStore {
  /** Token is a Hadoop token (TokenProto: identifier 1, password 2, kind 3, service 4). */
  static final class Token {
    final byte[] identifier;
    final byte[] password;
    final String kind;
    final String service;

    Token(byte[] identifier, byte[] password, String kind, String service) {
      this.identifier = identifier;
      this.password = password;
      this.kind = kind;
      this.service = service;
    }

    static Token fromProto(Pb.Msg m) throws IOException {
      for (int f = 1; f <= 4; f++) {
        if (!m.has(f)) {
          throw new IOException("a TokenProto without its required field " + f);
        }
      }
      return new Token(m.bytes(1), m.bytes(2), m.string(3, ""), m.string(4, ""));
    }

    Pb.Writer toProto() {
      return new Pb.Writer().bytes(1, identifier).bytes(2, password).string(3, kind).string(4, service);
    }

    @Override
    public String toString() {
      return "token of kind " + kind + " for service '" + service + "'";
    }
  }

  static final class Entry {
    final String alias;
    final Token token;

    Entry(String alias, Token token) {
      this.alias = alias;
      this.token = token;
    }
  }

  private static final byte[] MAGIC = "HDTS".getBytes(StandardCharsets.US_ASCII);
  private static final int MAX_ENTRIES = 1 << 16;

  final List<Entry> tokens = new ArrayList<>();
  final List<String> secretAliases = new ArrayList<>();
  final List<byte[]> secrets = new ArrayList<>();

  Token find(String kind) {
    for (Entry e : tokens) {
      if (e.token.kind.equals(kind)) {
        return e.token;
      }
    }
    return null;
  }

  static TokenStore read(Path file) throws IOException {
    byte[] b;
    try {
      b = Files.readAllBytes(file);
    } catch (IOException e) {
      throw new IOException("cannot read the token file " + file + ": " + e, e);
    }
    try {
      return parse(b);
    } catch (IOException e) {
      throw new IOException("the token file " + file + " is not Hadoop token storage: " + e.getMessage(), e);
    }
  }

  static TokenStore parse(byte[] b) throws IOException {
    if (b.length < MAGIC.length + 1 || !Arrays.equals(Arrays.copyOf(b, MAGIC.length), MAGIC)) {
      throw new IOException("no HDTS header");
    }
    int format = b[MAGIC.length];
    Reader r = new Reader(b, MAGIC.length + 1);
    TokenStore s = new TokenStore();
    if (format == 0) {
      // Credentials.readFields: vint count, then (Text alias, Token) each;
      // vint count, then (Text alias, vint length, bytes) each.
      int n = r.count("tokens");
      for (int i = 0; i < n; i++) {
        String alias = r.text();
        byte[] id = r.bytes();
        byte[] pw = r.bytes();
        String kind = r.text();
        String service = r.text();
        s.tokens.add(new Entry(alias, new Token(id, pw, kind, service)));
      }
      n = r.count("secrets");
      for (int i = 0; i < n; i++) {
        s.secretAliases.add(r.text());
        s.secrets.add(r.bytes());
      }
      if (r.pos != b.length) {
        throw new IOException((b.length - r.pos) + " bytes after the last secret");
      }
    } else if (format == 1) {
      Pb.Cursor c = new Pb.Cursor(b, MAGIC.length + 1, b.length - MAGIC.length - 1);
      Pb.Msg creds = Pb.Msg.parse(c.delimited());
      for (Pb.Msg kv : creds.messages(1)) {
        s.tokens.add(new Entry(kv.string(1, ""), Token.fromProto(kv.message(2))));
      }
      for (Pb.Msg kv : creds.messages(2)) {
        s.secretAliases.add(kv.string(1, ""));
        s.secrets.add(kv.bytes(3));
      }
    } else {
      throw new IOException("unknown token storage format " + format);
    }
    return s;
  }

  /** writable encodes the store in format 0, what writeTokenStorageToStream writes by default. */
  byte[] writable() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(MAGIC, 0, MAGIC.length);
    out.write(0);
    writeVLong(out, tokens.size());
    for (Entry e : tokens) {
      writeBytes(out, e.alias.getBytes(StandardCharsets.UTF_8));
      writeBytes(out, e.token.identifier);
      writeBytes(out, e.token.password);
      writeBytes(out, e.token.kind.getBytes(StandardCharsets.UTF_8));
      writeBytes(out, e.token.service.getBytes(StandardCharsets.UTF_8));
    }
    writeVLong(out, secrets.size());
    for (int i = 0; i < secrets.size(); i++) {
      writeBytes(out, secretAliases.get(i).getBytes(StandardCharsets.UTF_8));
      writeBytes(out, secrets.get(i));
    }
    return out.toByteArray();
  }

  private static void writeBytes(ByteArrayOutputStream out, byte[] b) {
    writeVLong(out, b.length);
    out.write(b, 0, b.length);
  }

  /** writeVLong is WritableUtils.writeVLong's encoding. */
  static void writeVLong(ByteArrayOutputStream out, long v) {
    if (v >= -112 && v <= 127) {
      out.write((int) v);
      return;
    }
    int len = -112;
    if (v < 0) {
      v ^= -1L;
      len = -120;
    }
    for (long t = v; t != 0; t >>= 8) {
      len--;
    }
    out.write(len);
    int n = len < -120 ? -(len + 120) : -(len + 112);
    for (int i = n; i > 0; i--) {
      out.write((int) (v >> ((i - 1) * 8)));
    }
  }

  /** Reader reads Writables: WritableUtils vints and Text. */
  private static final class Reader {
    final byte[] b;
    int pos;

    Reader(byte[] b, int pos) {
      this.b = b;
      this.pos = pos;
    }

    private int next() throws IOException {
      if (pos >= b.length) {
        throw new IOException("truncated at byte " + pos);
      }
      return b[pos++];
    }

    long vlong() throws IOException {
      int first = next();
      if (first >= -112) {
        return first;
      }
      boolean negative = first < -120;
      int n = negative ? -(first + 120) : -(first + 112);
      long v = 0;
      for (int i = 0; i < n; i++) {
        v = (v << 8) | (next() & 0xff);
      }
      return negative ? ~v : v;
    }

    int count(String what) throws IOException {
      long n = vlong();
      if (n < 0 || n > MAX_ENTRIES) {
        throw new IOException("a count of " + n + " " + what);
      }
      return (int) n;
    }

    byte[] bytes() throws IOException {
      long n = vlong();
      if (n < 0 || n > b.length - pos) {
        throw new IOException("a field of " + n + " bytes with " + (b.length - pos) + " left");
      }
      byte[] v = Arrays.copyOfRange(b, pos, pos + (int) n);
      pos += (int) n;
      return v;
    }

    String text() throws IOException {
      return new String(bytes(), StandardCharsets.UTF_8);
    }
  }
}
