// GssPeer is a SASL GSSAPI client as Hadoop's SaslRpcClient runs it for
// KERBEROS auth: logged in from a keytab with the JDK's Krb5LoginModule,
// QOP auth, server authentication (mutual) asked for, protocol and server
// name from the server's NEGOTIATE. The Go test plays the server and
// talks to it over stdin and stdout, one base64 message per line ("-"
// for an empty one); it prints "complete" when the exchange is.
//
//   java -Djava.security.krb5.conf=<krb5.conf> GssPeer <principal> <keytab> <protocol> <host>
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.security.PrivilegedExceptionAction;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import javax.security.auth.Subject;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.Configuration;
import javax.security.auth.login.LoginContext;
import javax.security.sasl.Sasl;
import javax.security.sasl.SaslClient;

public class GssPeer {
  public static void main(String[] args) throws Exception {
    String principal = args[0], keytab = args[1], protocol = args[2], host = args[3];
    Configuration.setConfiguration(new Configuration() {
      @Override
      public AppConfigurationEntry[] getAppConfigurationEntry(String name) {
        Map<String, String> o = new HashMap<>();
        o.put("useKeyTab", "true");
        o.put("keyTab", keytab);
        o.put("principal", principal);
        o.put("storeKey", "true");
        o.put("doNotPrompt", "true");
        o.put("refreshKrb5Config", "true");
        o.put("isInitiator", "true");
        return new AppConfigurationEntry[] {new AppConfigurationEntry(
            "com.sun.security.auth.module.Krb5LoginModule", AppConfigurationEntry.LoginModuleControlFlag.REQUIRED, o)};
      }
    });
    LoginContext lc = new LoginContext("loom");
    lc.login();
    Subject subject = lc.getSubject();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    Map<String, String> props = new HashMap<>();
    props.put(Sasl.QOP, "auth");
    props.put(Sasl.SERVER_AUTH, "true");
    Subject.doAs(subject, (PrivilegedExceptionAction<Void>) () -> {
      SaslClient c = Sasl.createSaslClient(new String[] {"GSSAPI"}, null, protocol, host, props, null);
      send(c.hasInitialResponse() ? c.evaluateChallenge(new byte[0]) : new byte[0]);
      while (!c.isComplete()) {
        byte[] challenge = read(in);
        byte[] response = c.evaluateChallenge(challenge);
        if (response != null) {
          send(response);
        }
      }
      System.out.println("complete");
      return null;
    });
  }

  static byte[] read(BufferedReader in) throws Exception {
    String l = in.readLine();
    if (l == null || l.equals("-")) {
      return new byte[0];
    }
    return Base64.getDecoder().decode(l.trim());
  }

  static void send(byte[] b) {
    System.out.println(b == null || b.length == 0 ? "-" : Base64.getEncoder().encodeToString(b));
    System.out.flush();
  }
}
