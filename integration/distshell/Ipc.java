// Ipc is one Hadoop IPC (version 9) client connection, driven as
// org.apache.hadoop.ipc.Client and ProtobufRpcEngine2 drive theirs:
//
//   - the preamble "hrpc", version 9, service class 0, auth protocol -33
//     (SASL: the caller holds a token);
//   - SASL as SaslRpcClient.saslConnect: NEGOTIATE, then INITIATE with the
//     first auth offered that it can use (TOKEN with DIGEST-MD5 through the
//     JDK's javax.security.sasl, answering the challenge the server sent
//     with NEGOTIATE), CHALLENGE/RESPONSE until SUCCESS, whose token (the
//     rspauth) the client checks;
//   - the connection context (call -3): the protocol, and user information
//     as ProtoUtil.makeIpcConnectionContext makes it (none under TOKEN
//     auth: the token says who the caller is);
//   - calls: each a 4-byte length, a delimited RpcRequestHeaderProto, a
//     delimited RequestHeaderProto (method, protocol, version 1), and the
//     delimited request; each reply a 4-byte length, a delimited
//     RpcResponseHeaderProto and, on success, the delimited response.
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.CallbackHandler;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.PasswordCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.sasl.RealmCallback;
import javax.security.sasl.RealmChoiceCallback;
import javax.security.sasl.Sasl;
import javax.security.sasl.SaslClient;
import javax.security.sasl.SaslException;

final class Ipc implements Closeable {
  /** RemoteException is an error the server sent: its Java class and message. */
  static final class RemoteException extends IOException {
    private static final long serialVersionUID = 1L;

    final String className;

    RemoteException(String className, String message) {
      super(className + ": " + message);
      this.className = className;
    }
  }

  static final int VERSION = 9;
  static final int CALL_CONNECTION_CONTEXT = -3;
  static final int CALL_SASL = -33;
  static final int RPC_PROTOCOL_BUFFER = 2;
  static final int MAX_FRAME = 64 << 20; // ipc.maximum.data.length

  // SASL states (RpcSaslProto.SaslState).
  static final int SASL_SUCCESS = 0;
  static final int SASL_NEGOTIATE = 1;
  static final int SASL_INITIATE = 2;
  static final int SASL_CHALLENGE = 3;
  static final int SASL_RESPONSE = 4;

  /** One client id for the process, as org.apache.hadoop.ipc.ClientId. */
  private static final byte[] CLIENT_ID = uuidBytes();
  /** Call ids count from 0 across every connection, as Client's counter. */
  private static final AtomicInteger CALL_IDS = new AtomicInteger();

  private final String address;
  private final String protocol;
  private final Socket socket;
  private final DataInputStream in;
  private final DataOutputStream out;
  private String authMethod = "SIMPLE";

  private static byte[] uuidBytes() {
    UUID u = UUID.randomUUID();
    return ByteBuffer.allocate(16).putLong(u.getMostSignificantBits()).putLong(u.getLeastSignificantBits()).array();
  }

  /**
   * open connects to address (host:port) for protocol, authenticating with
   * token; simpleUser is who the connection says it is should the server
   * offer SIMPLE auth before TOKEN (as the UGI's user name would be).
   */
  static Ipc open(String address, String protocol, TokenStore.Token token, String simpleUser) throws IOException {
    Ipc c = new Ipc(address, protocol);
    try {
      c.setUp(token, simpleUser);
    } catch (IOException | RuntimeException e) {
      c.close();
      throw e;
    }
    return c;
  }

  private Ipc(String address, String protocol) throws IOException {
    this.address = address;
    this.protocol = protocol;
    int colon = address.lastIndexOf(':');
    if (colon <= 0) {
      throw new IOException("address " + address + " is not host:port");
    }
    String host = address.substring(0, colon);
    int port;
    try {
      port = Integer.parseInt(address.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IOException("address " + address + " is not host:port");
    }
    socket = new Socket();
    socket.setTcpNoDelay(true); // ipc.client.tcpnodelay
    try {
      socket.connect(new InetSocketAddress(host, port), 20000);
    } catch (IOException e) {
      socket.close();
      throw new IOException("cannot connect to " + address + ": " + e, e);
    }
    socket.setSoTimeout(60000);
    in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
    out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
  }

  String authMethod() {
    return authMethod;
  }

  private void setUp(TokenStore.Token token, String simpleUser) throws IOException {
    // Client.Connection.writeConnectionHeader.
    out.write("hrpc".getBytes(StandardCharsets.US_ASCII));
    out.write(VERSION);
    out.write(0); // service class
    out.write(CALL_SASL); // AuthProtocol.SASL
    out.flush();
    saslConnect(token);
    // Client.Connection.writeConnectionContext.
    Pb.Writer user = new Pb.Writer();
    if (authMethod.equals("SIMPLE")) {
      user.string(1, simpleUser);
    }
    Pb.Writer context = new Pb.Writer().message(2, user).string(3, protocol);
    send(requestHeader(CALL_CONNECTION_CONTEXT, CLIENT_ID, -1), context.toByteArray());
  }

  /** requestHeader is an RpcRequestHeaderProto: kind, final packet, call id, client id, retry count. */
  private static byte[] requestHeader(int callId, byte[] clientId, int retry) {
    return new Pb.Writer().int32(1, RPC_PROTOCOL_BUFFER).int32(2, 0).sint32(3, callId).bytes(4, clientId).sint32(5, retry)
        .toByteArray();
  }

  private void send(byte[]... messages) throws IOException {
    ByteArrayOutputStream frame = new ByteArrayOutputStream();
    for (byte[] m : messages) {
      byte[] d = Pb.delimited(m);
      frame.write(d, 0, d.length);
    }
    out.writeInt(frame.size());
    frame.writeTo(out);
    out.flush();
  }

  /** Reply is a received frame: its response header, and a cursor on what follows it. */
  private static final class Reply {
    Pb.Msg header;
    Pb.Cursor rest;
  }

  private Reply receive() throws IOException {
    int n;
    byte[] frame;
    try {
      n = in.readInt();
      if (n < 0 || n > MAX_FRAME) {
        throw new IOException("a reply of " + n + " bytes from " + address);
      }
      frame = new byte[n];
      in.readFully(frame);
    } catch (EOFException e) {
      throw new IOException("the server at " + address + " closed the connection", e);
    }
    Reply r = new Reply();
    r.rest = new Pb.Cursor(frame, 0, n);
    r.header = Pb.Msg.parse(r.rest.delimited());
    int status = r.header.int32(2, -1);
    if (status != 0) {
      // ERROR (1) fails the call; FATAL (2) the connection too.
      throw new RemoteException(r.header.string(4, "(no exception class)"), r.header.string(5, "(no message)")
          + (status == 2 ? " [FATAL " + r.header.int32(6, 0) + "]" : ""));
    }
    return r;
  }

  private void sendSasl(Pb.Writer m) throws IOException {
    send(requestHeader(CALL_SASL, new byte[0], -1), m.toByteArray());
  }

  private void saslConnect(TokenStore.Token token) throws IOException {
    sendSasl(new Pb.Writer().int32(2, SASL_NEGOTIATE));
    SaslClient sasl = null;
    try {
      while (true) {
        Reply r = receive();
        if (r.header.int32(1, 0) != CALL_SASL) {
          throw new SaslException("Non-SASL response during negotiation with " + address);
        }
        Pb.Msg m = Pb.Msg.parse(r.rest.delimited());
        if (r.rest.more()) {
          throw new SaslException("Received malformed response length");
        }
        int state = m.int32(2, -1);
        switch (state) {
          case SASL_NEGOTIATE: {
            Pb.Msg chosen = null;
            List<String> offered = new ArrayList<>();
            for (Pb.Msg auth : m.messages(4)) {
              String method = auth.string(1, "");
              String mech = auth.string(2, "");
              offered.add(method);
              if (method.equals("SIMPLE") && mech.equals("")) {
                chosen = auth;
                break;
              }
              if (method.equals("TOKEN") && mech.equals("DIGEST-MD5") && token != null) {
                chosen = auth;
                break;
              }
              // KERBEROS (GSSAPI): this client has no Kerberos credentials.
            }
            if (chosen == null) {
              throw new IOException("org.apache.hadoop.security.AccessControlException: Client cannot authenticate via:" + offered);
            }
            authMethod = chosen.string(1, "");
            if (authMethod.equals("SIMPLE")) {
              sendSasl(new Pb.Writer().int32(2, SASL_INITIATE).message(4, new Pb.Writer().string(1, "SIMPLE").string(2, "")));
              return; // not waiting for an answer, as SaslRpcClient does not
            }
            sasl = digestClient(chosen, token);
            byte[] response;
            if (chosen.has(5)) {
              response = sasl.evaluateChallenge(chosen.bytes(5));
            } else if (sasl.hasInitialResponse()) {
              response = sasl.evaluateChallenge(new byte[0]);
            } else {
              response = new byte[0];
            }
            // Echo the auth chosen, without its challenge.
            Pb.Writer echo = new Pb.Writer().string(1, authMethod).string(2, chosen.string(2, ""));
            if (chosen.has(3)) {
              echo.string(3, chosen.string(3, ""));
            }
            if (chosen.has(4)) {
              echo.string(4, chosen.string(4, ""));
            }
            Pb.Writer initiate = new Pb.Writer().int32(2, SASL_INITIATE);
            if (response != null) {
              initiate.bytes(3, response);
            }
            sendSasl(initiate.message(4, echo));
            break;
          }
          case SASL_CHALLENGE: {
            if (sasl == null) {
              throw new SaslException("Server sent unsolicited challenge");
            }
            if (!m.has(3)) {
              throw new SaslException("Server challenge contains no token");
            }
            byte[] response = sasl.evaluateChallenge(m.bytes(3));
            Pb.Writer reply = new Pb.Writer().int32(2, SASL_RESPONSE);
            if (response != null) {
              reply.bytes(3, response);
            }
            sendSasl(reply);
            break;
          }
          case SASL_SUCCESS: {
            if (sasl == null) {
              authMethod = "SIMPLE"; // a SIMPLE-only server
              return;
            }
            byte[] extra = null;
            if (m.has(3)) {
              extra = sasl.evaluateChallenge(m.bytes(3)); // checks the server's rspauth
            }
            if (!sasl.isComplete()) {
              throw new SaslException("Client is out of sync with server " + address);
            }
            if (extra != null) {
              throw new SaslException("Client generated spurious response");
            }
            Object qop = sasl.getNegotiatedProperty(Sasl.QOP);
            if (qop != null && !"auth".equals(qop)) {
              throw new SaslException("the server at " + address + " negotiated QOP " + qop + "; this client does not wrap");
            }
            return;
          }
          default:
            throw new SaslException("RPC client doesn't support SASL state " + state);
        }
      }
    } finally {
      if (sasl != null) {
        sasl.dispose();
      }
    }
  }

  /**
   * digestClient is the JDK's DIGEST-MD5 client configured as Hadoop's
   * SaslRpcClient configures it for TOKEN auth: the auth's protocol and
   * server id, QOP auth and server authentication
   * (SaslPropertiesResolver's defaults), the username the base64 of the
   * token's identifier and the password the base64 of its password.
   */
  private static SaslClient digestClient(Pb.Msg auth, TokenStore.Token token) throws IOException {
    Map<String, String> props = new HashMap<>();
    props.put(Sasl.QOP, "auth");
    props.put(Sasl.SERVER_AUTH, "true");
    String user = Base64.getEncoder().encodeToString(token.identifier);
    char[] password = Base64.getEncoder().encodeToString(token.password).toCharArray();
    CallbackHandler cb = (Callback[] callbacks) -> {
      for (Callback c : callbacks) {
        if (c instanceof RealmChoiceCallback) {
          continue;
        } else if (c instanceof NameCallback) {
          ((NameCallback) c).setName(user);
        } else if (c instanceof PasswordCallback) {
          ((PasswordCallback) c).setPassword(password);
        } else if (c instanceof RealmCallback) {
          RealmCallback rc = (RealmCallback) c;
          rc.setText(rc.getDefaultText());
        } else {
          throw new UnsupportedCallbackException(c, "Unrecognized SASL client callback");
        }
      }
    };
    SaslClient c = Sasl.createSaslClient(new String[] {"DIGEST-MD5"}, null, auth.string(3, null), auth.string(4, null), props, cb);
    if (c == null) {
      throw new SaslException("the JDK has no DIGEST-MD5 SASL client");
    }
    return c;
  }

  /** call invokes method of the connection's protocol and returns the response message's bytes. */
  synchronized byte[] call(String method, byte[] request) throws IOException {
    int id = CALL_IDS.getAndIncrement() & 0x7fffffff;
    byte[] methodHeader = new Pb.Writer().string(1, method).string(2, protocol).int64(3, 1).toByteArray();
    send(requestHeader(id, CLIENT_ID, 0), methodHeader, request);
    Reply r;
    try {
      r = receive();
    } catch (RemoteException e) {
      throw new RemoteException(e.className, "calling " + method + " on " + address + ": " + e.getMessage().substring(e.className.length() + 2));
    }
    int got = r.header.int32(1, 0);
    if (got != id) {
      throw new IOException("a reply to call " + got + " from " + address + " while waiting for call " + id);
    }
    return r.rest.delimited();
  }

  @Override
  public void close() {
    try {
      socket.close();
    } catch (IOException e) {
      // nothing to do
    }
  }
}
