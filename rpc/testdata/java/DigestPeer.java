// DigestPeer runs one side of a SASL DIGEST-MD5 exchange with the JDK's own
// implementation, the one Hadoop's SaslRpcClient and SaslRpcServer use for
// TOKEN auth, configured as Hadoop configures it: protocol "", server id
// "default", qop auth. The Go test talks to it over stdin and stdout, one
// base64 message per line ("-" for an empty one).
//
//   java DigestPeer client <username> <password>
//   java DigestPeer server <username> <password>
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.CallbackHandler;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.PasswordCallback;
import javax.security.sasl.AuthorizeCallback;
import javax.security.sasl.RealmCallback;
import javax.security.sasl.Sasl;
import javax.security.sasl.SaslClient;
import javax.security.sasl.SaslServer;

public class DigestPeer {
  public static void main(String[] args) throws Exception {
    String user = args[1];
    char[] password = args[2].toCharArray();
    Map<String, String> props = new HashMap<>();
    props.put(Sasl.QOP, "auth");
    props.put(Sasl.SERVER_AUTH, "true");
    CallbackHandler cb = (Callback[] callbacks) -> {
      for (Callback c : callbacks) {
        if (c instanceof NameCallback) {
          ((NameCallback) c).setName(user);
        } else if (c instanceof PasswordCallback) {
          ((PasswordCallback) c).setPassword(password);
        } else if (c instanceof RealmCallback) {
          RealmCallback rc = (RealmCallback) c;
          rc.setText(rc.getDefaultText());
        } else if (c instanceof AuthorizeCallback) {
          AuthorizeCallback ac = (AuthorizeCallback) c;
          ac.setAuthorized(ac.getAuthenticationID().equals(ac.getAuthorizationID()));
          if (ac.isAuthorized()) {
            ac.setAuthorizedID(ac.getAuthorizationID());
          }
        }
      }
    };
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    if (args[0].equals("client")) {
      SaslClient c = Sasl.createSaslClient(new String[] {"DIGEST-MD5"}, null, "", "default", props, cb);
      // The server's challenge (Hadoop sends it with NEGOTIATE), then its rspauth.
      send(c.evaluateChallenge(read(in)));
      c.evaluateChallenge(read(in)); // throws if the rspauth is wrong
      System.out.println(c.isComplete() ? "complete" : "incomplete");
    } else {
      SaslServer s = Sasl.createSaslServer("DIGEST-MD5", "", "default", props, cb);
      send(s.evaluateResponse(new byte[0]));
      byte[] rspauth = s.evaluateResponse(read(in)); // throws if the response is wrong
      send(rspauth);
      System.out.println(s.isComplete() ? "complete " + s.getAuthorizationID() : "incomplete");
    }
    System.out.flush();
  }

  static byte[] read(BufferedReader in) throws Exception {
    String line = in.readLine();
    return line.equals("-") ? new byte[0] : Base64.getDecoder().decode(line);
  }

  static void send(byte[] b) {
    System.out.println(b == null || b.length == 0 ? "-" : Base64.getEncoder().encodeToString(b));
    System.out.flush();
  }
}
