// DistShellAM is a YARN ApplicationMaster in the manner of Hadoop's
// DistributedShell AM, written against YARN's published protocol alone:
// plain Java, no Hadoop jars, no protobuf library. It
//
//   1. reads its AMRM token from the Hadoop credentials file named by
//      HADOOP_TOKEN_FILE_LOCATION (the NodeManager writes it; an unmanaged
//      AM's launcher writes it, as UnmanagedAMLauncher does);
//   2. connects to the RM's scheduler address with SASL TOKEN
//      (DIGEST-MD5) auth and registers (ApplicationMasterProtocol);
//   3. asks for N containers and heartbeats (allocate) until all are
//      granted, keeping the NMTokens the replies bring (NMTokenCache);
//   4. starts each container on its NodeManager (ContainerManagementProtocol,
//      TOKEN auth with that node's NMToken, as the attempt) with the shell
//      command, its output redirected to <LOG_DIR>/stdout and stderr;
//   5. heartbeats until every container has completed, and unregisters
//      SUCCEEDED if all exited 0 (FAILED otherwise), polling until the RM
//      says it is unregistered.
//
// Usage:
//   java DistShellAM <scheduler host:port> [--num-containers N]
//       [--container-memory MB] [--container-vcores V] [--priority P]
//       [--shell-command CMD] [--interval-ms MS] [--timeout-s S]
//
// It prints its progress to stdout; on any error it prints what went wrong
// to stderr and exits non-zero.
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class DistShellAM {
  static final String AMRM_PROTOCOL = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";
  static final String CM_PROTOCOL = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB";
  static final String AMRM_TOKEN_KIND = "YARN_AM_RM_TOKEN";
  static final String NM_TOKEN_KIND = "NMToken";
  static final String NOT_REGISTERED = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException";

  // FinalApplicationStatusProto, AMCommandProto, ContainerStateProto.
  static final int APP_SUCCEEDED = 1;
  static final int APP_FAILED = 2;
  static final int AM_RESYNC = 1;
  static final int AM_SHUTDOWN = 2;
  static final int C_COMPLETE = 3;

  /** Fatal is an error the AM cannot go on from, with the message to print. */
  static final class Fatal extends Exception {
    private static final long serialVersionUID = 1L;

    Fatal(String message) {
      super(message);
    }
  }

  // Options.
  String scheduler;
  int numContainers = 2;
  long containerMemory = 128;
  int containerVcores = 1;
  int priority = 1;
  String shellCommand = "echo hello from $CONTAINER_ID";
  long intervalMs = 200;
  long timeoutS = 120;

  // State.
  TokenStore creds;
  TokenStore.Token amrmToken;
  String attempt;
  Ipc rm;
  int responseId;
  boolean registered;
  final Map<String, TokenStore.Token> nmTokens = new HashMap<>(); // by node host:port
  final Map<String, Pb.Msg> granted = new LinkedHashMap<>(); // by container id
  final Map<String, String> nodeOf = new HashMap<>();
  final Map<String, Integer> exits = new LinkedHashMap<>();
  final List<byte[]> toRelease = new ArrayList<>();
  boolean askChanged = true;
  long deadline;

  public static void main(String[] args) {
    DistShellAM am = new DistShellAM();
    int rc;
    try {
      am.parseArgs(args);
      rc = am.run();
    } catch (Fatal | IOException e) {
      System.err.println("DistShellAM: " + e.getMessage());
      rc = 2;
    } catch (Exception e) {
      System.err.println("DistShellAM: " + e);
      e.printStackTrace();
      rc = 2;
    } finally {
      if (am.rm != null) {
        am.rm.close();
      }
    }
    System.out.flush();
    System.err.flush();
    System.exit(rc);
  }

  static void log(String s) {
    System.out.println("DistShellAM: " + s);
    System.out.flush();
  }

  void parseArgs(String[] args) throws Fatal {
    if (args.length < 1 || args[0].startsWith("--")) {
      throw new Fatal("usage: DistShellAM <scheduler host:port> [--num-containers N] [--container-memory MB] "
          + "[--container-vcores V] [--priority P] [--shell-command CMD] [--interval-ms MS] [--timeout-s S]");
    }
    scheduler = args[0];
    for (int i = 1; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        throw new Fatal("option " + args[i] + " has no value");
      }
      String v = args[i + 1];
      try {
        switch (args[i]) {
          case "--num-containers":
            numContainers = Integer.parseInt(v);
            break;
          case "--container-memory":
            containerMemory = Long.parseLong(v);
            break;
          case "--container-vcores":
            containerVcores = Integer.parseInt(v);
            break;
          case "--priority":
            priority = Integer.parseInt(v);
            break;
          case "--shell-command":
            shellCommand = v;
            break;
          case "--interval-ms":
            intervalMs = Long.parseLong(v);
            break;
          case "--timeout-s":
            timeoutS = Long.parseLong(v);
            break;
          default:
            throw new Fatal("unknown option " + args[i]);
        }
      } catch (NumberFormatException e) {
        throw new Fatal("option " + args[i] + ": " + v + " is not a number");
      }
    }
    if (numContainers < 1) {
      throw new Fatal("--num-containers must be at least 1");
    }
  }

  int run() throws Exception {
    deadline = System.currentTimeMillis() + timeoutS * 1000;
    readToken();
    try {
      rm = Ipc.open(scheduler, AMRM_PROTOCOL, amrmToken, simpleUser());
    } catch (IOException e) {
      throw new Fatal("connecting to the scheduler at " + scheduler + " with the AMRM token for " + attempt + ": " + e.getMessage());
    }
    log("connected to the scheduler at " + scheduler + " with " + rm.authMethod() + " auth as " + attempt);
    register();
    String failure = null;
    try {
      runContainers();
      List<String> failed = new ArrayList<>();
      for (Map.Entry<String, Integer> e : exits.entrySet()) {
        if (e.getValue() != 0) {
          failed.add(e.getKey() + " exited " + e.getValue());
        }
      }
      if (!failed.isEmpty()) {
        failure = "containers failed: " + String.join(", ", failed);
      }
    } catch (Fatal e) {
      failure = e.getMessage();
    } catch (IOException e) {
      failure = e.getMessage();
    } catch (Exception e) {
      failure = e.toString();
    }
    if (failure != null) {
      System.err.println("DistShellAM: " + failure);
      try {
        unregister(APP_FAILED, "DistShellAM: " + failure);
      } catch (Exception e) {
        System.err.println("DistShellAM: unregistering FAILED: " + e);
      }
      return 1;
    }
    unregister(APP_SUCCEEDED, "all " + numContainers + " containers exited 0");
    return 0;
  }

  static String simpleUser() {
    String u = System.getenv("USER");
    return u != null ? u : System.getProperty("user.name");
  }

  /** readToken finds the AMRM token in the credentials file, and the attempt it names. */
  void readToken() throws Fatal, IOException {
    String file = System.getenv("HADOOP_TOKEN_FILE_LOCATION");
    if (file == null || file.isEmpty()) {
      throw new Fatal("HADOOP_TOKEN_FILE_LOCATION is not set: no credentials to authenticate to the RM with");
    }
    Path path = Paths.get(file);
    creds = TokenStore.read(path);
    amrmToken = creds.find(AMRM_TOKEN_KIND);
    if (amrmToken == null) {
      List<String> kinds = new ArrayList<>();
      for (TokenStore.Entry e : creds.tokens) {
        kinds.add(e.token.kind);
      }
      throw new Fatal("the credentials in " + file + " hold no " + AMRM_TOKEN_KIND + " token (kinds: " + kinds + ")");
    }
    // AMRMTokenIdentifierProto: appAttemptId 1, keyId 2.
    Pb.Msg id = Pb.Msg.parse(amrmToken.identifier);
    if (!id.has(1)) {
      throw new Fatal("the AMRM token's identifier names no application attempt");
    }
    attempt = Ids.attempt(id.message(1));
    // A launched AM knows its attempt from CONTAINER_ID too; they must agree.
    String cid = System.getenv("CONTAINER_ID");
    if (cid != null && !cid.isEmpty()) {
      String fromEnv = Ids.attemptOfContainer(cid);
      if (!fromEnv.equals(attempt)) {
        throw new Fatal("CONTAINER_ID " + cid + " is of " + fromEnv + " but the AMRM token is for " + attempt);
      }
    }
    log("AMRM token for " + attempt + " from " + file);
  }

  void register() throws Exception {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      host = "localhost";
    }
    // RegisterApplicationMasterRequestProto: host 1, rpc_port 2, tracking_url 3.
    byte[] req = new Pb.Writer().string(1, host).int32(2, -1).string(3, "").toByteArray();
    Pb.Msg resp = Pb.Msg.parse(rm.call("registerApplicationMaster", req));
    registered = true;
    responseId = 0;
    // maximumCapability 1; queue 5; nm_tokens_from_previous_attempts 6.
    Pb.Msg max = resp.message(1);
    long maxMem = max.int64(1, 0);
    int maxVcores = max.int32(2, 0);
    log("registered; maximum capability " + maxMem + " MB, " + maxVcores + " vcores; queue " + resp.string(5, "?"));
    if (maxMem > 0 && containerMemory > maxMem) {
      log("asking for " + maxMem + " MB, the maximum, instead of " + containerMemory);
      containerMemory = maxMem;
    }
    if (maxVcores > 0 && containerVcores > maxVcores) {
      containerVcores = maxVcores;
    }
    keepNMTokens(resp.messages(6));
  }

  void keepNMTokens(List<Pb.Msg> tokens) throws IOException {
    // NMTokenProto: nodeId 1, token 2.
    for (Pb.Msg nt : tokens) {
      String node = Ids.node(nt.message(1));
      boolean fresh = !nmTokens.containsKey(node);
      nmTokens.put(node, TokenStore.Token.fromProto(nt.message(2)));
      if (fresh) {
        log("NMToken for " + node);
      }
    }
  }

  /** ask is the ResourceRequestProto for what is still wanted. */
  Pb.Writer ask(int count) {
    Pb.Writer capability = new Pb.Writer().int64(1, containerMemory).int32(2, containerVcores);
    return new Pb.Writer().message(1, new Pb.Writer().int32(1, priority)).string(2, "*").message(3, capability)
        .int32(4, count).bool(5, true);
  }

  Pb.Msg allocate() throws Exception {
    int outstanding = Math.max(0, numContainers - granted.size());
    float progress = numContainers == 0 ? 1 : (float) exits.size() / numContainers;
    Pb.Writer req = new Pb.Writer();
    boolean sentAsk = askChanged;
    if (askChanged) {
      req.message(1, ask(outstanding));
    }
    List<byte[]> releasing = new ArrayList<>(toRelease);
    for (byte[] id : releasing) {
      req.bytes(2, id);
    }
    req.int32(4, responseId).float32(5, progress);
    byte[] raw;
    try {
      raw = rm.call("allocate", req.toByteArray());
    } catch (Ipc.RemoteException e) {
      if (!e.className.equals(NOT_REGISTERED)) {
        throw e;
      }
      // As AMRMClientImpl: register again, and send everything again.
      log("the RM no longer knows this AM (" + e.getMessage() + "): registering again");
      register();
      askChanged = true;
      return allocate();
    }
    if (sentAsk) {
      askChanged = false;
    }
    toRelease.removeAll(releasing);
    Pb.Msg resp = Pb.Msg.parse(raw);
    // AllocateResponseProto: a_m_command 1, response_id 2, allocated 3,
    // completed 4, nm_tokens 9, am_rm_token 12.
    responseId = resp.int32(2, responseId);
    if (resp.has(1)) {
      int cmd = resp.int32(1, 0);
      if (cmd == AM_SHUTDOWN) {
        throw new Fatal("the RM ordered this AM to shut down (AM_SHUTDOWN)");
      }
      if (cmd == AM_RESYNC) {
        log("the RM asked this AM to resync: registering again");
        register();
        askChanged = true;
      }
    }
    keepNMTokens(resp.messages(9));
    if (resp.has(12)) {
      // The RM rolled its AMRM key: the next connection uses the new token.
      amrmToken = TokenStore.Token.fromProto(resp.message(12));
      log("the RM sent a new AMRM token");
    }
    return resp;
  }

  void runContainers() throws Exception {
    log("asking for " + numContainers + " containers of " + containerMemory + " MB, " + containerVcores + " vcores at priority "
        + priority);
    while (exits.size() < numContainers) {
      if (System.currentTimeMillis() > deadline) {
        throw new Fatal("timed out after " + timeoutS + " s with " + granted.size() + " of " + numContainers
            + " containers granted and " + exits.size() + " completed");
      }
      Pb.Msg resp = allocate();
      for (Pb.Msg c : resp.messages(3)) {
        // ContainerProto: id 1, nodeId 2, resource 4, container_token 6.
        String id = Ids.container(c.message(1));
        if (granted.containsKey(id)) {
          continue;
        }
        if (granted.size() >= numContainers) {
          log("releasing " + id + ": more containers than asked for");
          toRelease.add(c.bytes(1));
          continue;
        }
        granted.put(id, c);
        askChanged = true;
        String node = Ids.node(c.message(2));
        nodeOf.put(id, node);
        log("granted " + id + " on " + node + " (" + c.message(4).int64(1, 0) + " MB)");
        start(id, node, c);
      }
      for (Pb.Msg st : resp.messages(4)) {
        // ContainerStatusProto: container_id 1, state 2, diagnostics 3, exit_status 4.
        String id = Ids.container(st.message(1));
        if (!granted.containsKey(id) || exits.containsKey(id)) {
          continue;
        }
        int exit = st.int32(4, -1000);
        exits.put(id, exit);
        log("container " + id + " on " + nodeOf.get(id) + " completed with exit status " + exit
            + (exit != 0 ? ": " + st.string(3, "") : ""));
      }
      if (exits.size() < numContainers) {
        Thread.sleep(intervalMs);
      }
    }
  }

  /** start starts one container on its node, as NMClient does: TOKEN auth with the node's NMToken, as the attempt. */
  void start(String id, String node, Pb.Msg container) throws Exception {
    TokenStore.Token nmToken = nmTokens.get(node);
    if (nmToken == null) {
      throw new Fatal("No NMToken sent for " + node + " (for " + id + ")");
    }
    if (!nmToken.kind.equals(NM_TOKEN_KIND)) {
      // NMClient's NMTokenSelector takes only tokens of this kind.
      throw new Fatal("the NMToken for " + node + " is of kind " + nmToken.kind + ", not " + NM_TOKEN_KIND);
    }
    if (!container.has(6)) {
      throw new Fatal("container " + id + " came without a container token");
    }
    // The containers get the AM's credentials without the AMRM token, as
    // Distributed Shell gives them.
    TokenStore taskCreds = new TokenStore();
    for (TokenStore.Entry e : creds.tokens) {
      if (!e.token.kind.equals(AMRM_TOKEN_KIND)) {
        taskCreds.tokens.add(e);
      }
    }
    taskCreds.secretAliases.addAll(creds.secretAliases);
    taskCreds.secrets.addAll(creds.secrets);
    String command = shellCommand + " 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr";
    // ContainerLaunchContextProto: tokens 2, command 5.
    Pb.Writer clc = new Pb.Writer().bytes(2, taskCreds.writable()).string(5, command);
    // StartContainerRequestProto: container_launch_context 1, container_token 2.
    Pb.Writer one = new Pb.Writer().message(1, clc).bytes(2, container.bytes(6));
    byte[] req = new Pb.Writer().message(1, one).toByteArray();
    Pb.Msg resp;
    try (Ipc nm = Ipc.open(node, CM_PROTOCOL, nmToken, attempt)) {
      resp = Pb.Msg.parse(nm.call("startContainers", req));
    } catch (IOException e) {
      throw new Fatal("starting " + id + " on the NodeManager at " + node + " with its NMToken: " + e.getMessage());
    }
    // StartContainersResponseProto: succeeded_requests 2, failed_requests 3.
    for (Pb.Msg f : resp.messages(3)) {
      Pb.Msg ex = f.message(2); // SerializedExceptionProto: message 1, class_name 3
      throw new Fatal("starting " + Ids.container(f.message(1)) + " on " + node + " failed: " + ex.string(3, "?") + ": "
          + ex.string(1, "?"));
    }
    boolean ok = false;
    for (Pb.Msg s : resp.messages(2)) {
      ok |= Ids.container(s).equals(id);
    }
    if (!ok) {
      throw new Fatal("starting " + id + " on " + node + ": the NodeManager reported neither success nor failure");
    }
    log("started " + id + " on " + node + ": " + command);
  }

  void unregister(int status, String diagnostics) throws Exception {
    if (!registered) {
      return;
    }
    // FinishApplicationMasterRequestProto: diagnostics 1, tracking_url 2, final_application_status 3.
    byte[] req = new Pb.Writer().string(1, diagnostics).string(2, "").int32(3, status).toByteArray();
    long until = System.currentTimeMillis() + 30000;
    while (true) {
      Pb.Msg resp = Pb.Msg.parse(rm.call("finishApplicationMaster", req));
      if (resp.bool(1, false)) { // isUnregistered
        log("unregistered with final status " + (status == APP_SUCCEEDED ? "SUCCEEDED" : "FAILED"));
        return;
      }
      if (System.currentTimeMillis() > until) {
        throw new Fatal("the RM has not unregistered this AM after 30 s of finishApplicationMaster");
      }
      Thread.sleep(100); // as AMRMClientImpl.unregisterApplicationMaster
    }
  }
}
