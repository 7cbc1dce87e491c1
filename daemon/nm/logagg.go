package nm

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/loomrm/loom/internal/logagg"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"google.golang.org/protobuf/proto"
)

// logReport is a log aggregation outcome for the RM; sent once it went
// out with a heartbeat.
type logReport struct {
	report *pb.LogAggregationReportProto
	sent   bool
}

// aggregateLogs copies the logs of every container app ran on this node
// to the remote log dir (see internal/logagg), removes them here once
// they are there, and tells the RM how it went. It runs after the app's
// containers have all exited.
func (n *NodeManager) aggregateLogs(user, app string) {
	var conts []logagg.Container
	byID := map[string]int{}
	var appDirs []string
	for _, d := range n.cfg.LogDirs {
		dir := filepath.Join(d, app)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		appDirs = append(appDirs, dir)
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			i, ok := byID[e.Name()]
			if !ok {
				i = len(conts)
				byID[e.Name()] = i
				conts = append(conts, logagg.Container{ID: e.Name()})
			}
			conts[i].Dirs = append(conts[i].Dirs, filepath.Join(dir, e.Name()))
		}
	}
	status, diag := pb.LogAggregationStatusProto_LOG_SUCCEEDED, ""
	start := time.Now()
	ctx, cancel := context.WithTimeout(n.ctx, 5*time.Minute)
	defer cancel()
	st, root, err := logagg.Open(ctx, n.cfg.RemoteLogDir, n.cfg.DefaultFS, user)
	files := 0
	if err == nil {
		dir := logagg.AppDir(root, user, n.cfg.RemoteLogSuffix, app)
		files, err = logagg.Write(st, dir, n.nodeKey, conts)
		st.Close()
	}
	if err != nil {
		status, diag = pb.LogAggregationStatusProto_LOG_FAILED, "log aggregation on "+n.nodeKey+" failed: "+err.Error()
		n.log.Warn().Err(err).Str("app", app).Msg("cannot aggregate the application's logs; they stay on this node")
	} else {
		n.log.Info().Str("app", app).Int("containers", len(conts)).Int("files", files).Dur("took", time.Since(start)).
			Msg("application's logs aggregated")
		for _, d := range appDirs {
			if err := os.RemoveAll(d); err != nil {
				n.log.Warn().Err(err).Str("dir", d).Msg("cannot remove aggregated logs")
			}
		}
	}
	id, perr := rpc.ParseAppID(app)
	if perr != nil {
		return
	}
	n.mu.Lock()
	n.logReports[app] = &logReport{report: &pb.LogAggregationReportProto{ApplicationId: id, LogAggregationStatus: status.Enum(),
		Diagnostics: proto.String(diag)}}
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}
