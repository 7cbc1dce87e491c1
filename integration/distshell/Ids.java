// Ids formats YARN's ids as their toString methods do
// (ApplicationAttemptId, ContainerId, NodeId), from their protos.
import java.io.IOException;

final class Ids {
  private Ids() {}

  /** attempt formats an ApplicationAttemptIdProto (application_id 1, attemptId 2). */
  static String attempt(Pb.Msg a) throws IOException {
    Pb.Msg app = a.message(1); // ApplicationIdProto: id 1, cluster_timestamp 2
    return String.format("appattempt_%d_%04d_%06d", app.int64(2, 0), app.int32(1, 0), a.int32(2, 0));
  }

  /** container formats a ContainerIdProto (app_id 1, app_attempt_id 2, id 3), with its epoch when it has one. */
  static String container(Pb.Msg c) throws IOException {
    Pb.Msg a = c.message(2);
    Pb.Msg app = a.message(1);
    long id = c.int64(3, 0);
    long epoch = id >> 40;
    StringBuilder sb = new StringBuilder("container_");
    if (epoch > 0) {
      sb.append('e').append(String.format("%02d", epoch)).append('_');
    }
    sb.append(app.int64(2, 0)).append('_').append(String.format("%04d", app.int32(1, 0))).append('_')
        .append(String.format("%02d", a.int32(2, 0))).append('_').append(String.format("%06d", id & 0xffffffffffL));
    return sb.toString();
  }

  /** node is a NodeIdProto (host 1, port 2) as host:port, the address of its ContainerManagementProtocol. */
  static String node(Pb.Msg n) throws IOException {
    return n.string(1, "") + ":" + n.int32(2, 0);
  }

  /** attemptOfContainer is the attempt of a container id string (container_[eNN_]ts_app_attempt_id). */
  static String attemptOfContainer(String cid) throws IOException {
    String[] p = cid.split("_");
    int i = 1;
    if (p.length == 6 && p[1].startsWith("e")) {
      i = 2;
    } else if (p.length != 5) {
      throw new IOException("CONTAINER_ID " + cid + " is not a container id");
    }
    if (!p[0].equals("container")) {
      throw new IOException("CONTAINER_ID " + cid + " is not a container id");
    }
    try {
      return String.format("appattempt_%d_%04d_%06d", Long.parseLong(p[i]), Integer.parseInt(p[i + 1]), Integer.parseInt(p[i + 2]));
    } catch (NumberFormatException e) {
      throw new IOException("CONTAINER_ID " + cid + " is not a container id");
    }
  }
}
