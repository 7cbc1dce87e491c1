package webui

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/internal/logagg"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// LogsConfig is where NodeManagers aggregate finished apps' logs
// (yarn.nodemanager.remote-app-log-dir and its suffix, fs.defaultFS), so
// that the web port can show them; nil when aggregation is off.
type LogsConfig struct {
	RemoteDir, Suffix, DefaultFS string
}

// appLogs opens the store of an app's aggregated logs, after the same
// checks as the app's report (it exists; the caller may see it).
func (c *call) appLogs() (logagg.Store, string, *pb.ApplicationReportProto, error) {
	id, err := c.appID()
	if err != nil {
		return nil, "", nil, err
	}
	rep, err := c.report(c.ctx(), id)
	if err != nil {
		return nil, "", nil, err
	}
	lc := c.s.cfg.Logs
	if lc == nil {
		return nil, "", rep, nil
	}
	st, root, err := logagg.Open(c.r.Context(), lc.RemoteDir, lc.DefaultFS, rep.GetUser())
	if err != nil {
		return nil, "", rep, internalError("cannot open the aggregated logs: %v", err)
	}
	return st, logagg.AppDir(root, rep.GetUser(), lc.Suffix, c.vars()["appid"]), rep, nil
}

// getAppLogs lists an app's aggregated log files, or says why there are
// none.
func getAppLogs(c *call) error {
	st, dir, rep, err := c.appLogs()
	if err != nil {
		return err
	}
	out := dao.AppLogs{App: c.vars()["appid"], Status: strings.TrimPrefix(rep.GetLogAggregationStatus().String(), "LOG_"),
		Logs: []dao.LogFile{}}
	if st == nil {
		out.Message = "Log aggregation is off (yarn.log-aggregation-enable): the logs stay on the NodeManagers."
		return c.json(http.StatusOK, out)
	}
	defer st.Close()
	err = logagg.Read(st, dir, func(l logagg.Log, _ io.Reader) error {
		out.Logs = append(out.Logs, dao.LogFile{Node: l.Node, Container: l.Container, File: l.File, Size: l.Size,
			ModifiedMs: l.ModTime.UnixMilli()})
		return nil
	})
	switch {
	case errors.Is(err, logagg.ErrNoLogs):
		out.Message = "No aggregated logs yet: NodeManagers aggregate an app's logs when it ends (status " + out.Status + ")."
	case err != nil:
		return internalError("cannot read the aggregated logs: %v", err)
	}
	return c.json(http.StatusOK, out)
}

// getAppLogFile is one aggregated log file, as plain text.
func getAppLogFile(c *call) error {
	st, dir, _, err := c.appLogs()
	if err != nil {
		return err
	}
	if st == nil {
		return notFound("log aggregation is off (yarn.log-aggregation-enable)")
	}
	defer st.Close()
	v := c.vars()
	found := false
	errFound := errors.New("found")
	err = logagg.Read(st, dir, func(l logagg.Log, r io.Reader) error {
		if l.Container != v["containerid"] || l.File != v["file"] {
			return nil
		}
		found = true
		h := c.w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Last-Modified", l.ModTime.UTC().Format(http.TimeFormat))
		c.w.WriteHeader(http.StatusOK)
		if c.r.Method != http.MethodHead {
			io.Copy(c.w, r)
		}
		return errFound
	})
	if found {
		return nil
	}
	if err != nil && !errors.Is(err, logagg.ErrNoLogs) {
		return internalError("cannot read the aggregated logs: %v", err)
	}
	return notFound("no aggregated log %s of container %s", v["file"], v["containerid"])
}
