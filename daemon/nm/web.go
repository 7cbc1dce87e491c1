package nm

// The NodeManager's web services: YARN's NodeManager REST API under
// /ws/v1/node (the node, its applications, its containers and their log
// files) and the container log page the RM's UI links to
// (/node/containerlogs/{containerid}/{user}), on
// yarn.nodemanager.webapp.address. Read-only: GET and HEAD only.

import (
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/mux"
	"github.com/loomrm/loom/fairness"
)

// The web server's timeouts. Log files are streamed, so the write
// timeout leaves room for a large one on a slow link.
const (
	webReadHeaderTimeout = 10 * time.Second
	webReadTimeout       = 30 * time.Second
	webWriteTimeout      = 5 * time.Minute
	webIdleTimeout       = 2 * time.Minute
	webMaxHeaderBytes    = 64 << 10
)

// vmemPmemRatio is YARN's default yarn.nodemanager.vmem-pmem-ratio, which
// totalVmemAllocatedContainersMB is computed with (Loom checks no virtual
// memory).
const vmemPmemRatio = 2.1

// The exception classes of YARN's web services.
const (
	classWebNotFound   = "org.apache.hadoop.yarn.webapp.NotFoundException"
	classWebBadRequest = "org.apache.hadoop.yarn.webapp.BadRequestException"
	classNotAllowed    = "javax.ws.rs.NotAllowedException"
	classWebAppFailure = "javax.ws.rs.WebApplicationException"
)

// containerIDPattern is a container id as YARN prints it, with or without
// the epoch; its groups are the cluster timestamp and the app's number.
// Only ids that match are looked for on disk, so a request cannot name a
// path.
var containerIDPattern = regexp.MustCompile(`^container_(?:e[0-9]+_)?([0-9]+)_([0-9]+)_[0-9]+_[0-9]+$`)

var appIDPattern = regexp.MustCompile(`^application_[0-9]+_[0-9]+$`)

// startWeb binds yarn.nodemanager.webapp.address and serves the web
// services on it. An address left at its default whose port is taken
// (several NMs on one machine) falls back to a free port; the port bound
// is the one registered with the RM.
func (n *NodeManager) startWeb() error {
	addr := n.cfg.WebAddress
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil && n.cfg.WebAddressDefaulted && errors.Is(err, syscall.EADDRINUSE) {
		host, _, _ := net.SplitHostPort(addr)
		n.log.Warn().Err(err).Str("address", addr).
			Msg("the default web address (yarn.nodemanager.webapp.address) is taken; serving the web services on a free port instead")
		ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
	}
	if err != nil {
		return fmt.Errorf("nm: listening on %s (yarn.nodemanager.webapp.address): %w", addr, err)
	}
	n.webLn = ln
	n.httpPort = ln.Addr().(*net.TCPAddr).Port
	n.web = &http.Server{Handler: n.webHandler(),
		ReadHeaderTimeout: webReadHeaderTimeout, ReadTimeout: webReadTimeout,
		WriteTimeout: webWriteTimeout, IdleTimeout: webIdleTimeout, MaxHeaderBytes: webMaxHeaderBytes}
	go func() {
		if err := n.web.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error().Err(err).Msg("web server stopped")
		}
	}()
	n.log.Info().Str("address", ln.Addr().String()).Msg("web services listening")
	return nil
}

// WebAddr is the address the web services listen on ("" before Start).
func (n *NodeManager) WebAddr() string {
	if n.webLn == nil {
		return ""
	}
	return n.webLn.Addr().String()
}

// webHandler routes the REST API and the log page.
func (n *NodeManager) webHandler() http.Handler {
	r := mux.NewRouter()
	// Variables are matched escaped, so that a file name with an escaped
	// "/" reaches the handler, which refuses it, rather than no route.
	r.UseEncodedPath()
	ws := r.PathPrefix("/ws/v1/node").Subrouter()
	ws.HandleFunc("", n.wsNodeInfo)
	ws.HandleFunc("/", n.wsNodeInfo)
	ws.HandleFunc("/info", n.wsNodeInfo)
	ws.HandleFunc("/apps", n.wsApps)
	ws.HandleFunc("/apps/{appid}", n.wsApp)
	ws.HandleFunc("/containers", n.wsContainers)
	ws.HandleFunc("/containers/{containerid}", n.wsContainer)
	ws.HandleFunc("/containers/{containerid}/logs", n.wsContainerLogs)
	ws.HandleFunc("/containers/{containerid}/logs/{filename}", n.wsContainerLogFile)
	r.HandleFunc("/node/containerlogs/{containerid}/{user}", n.uiContainerLogs)
	r.HandleFunc("/node/containerlogs/{containerid}/{user}/{filename}", n.uiContainerLogFile)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		webErr(w, req, http.StatusNotFound, classWebNotFound, "no such resource: "+req.URL.Path)
	})
	return readOnly(r)
}

// pathVar is a route variable, unescaped ("" if it cannot be).
func pathVar(r *http.Request, name string) string {
	v, err := url.PathUnescape(mux.Vars(r)[name])
	if err != nil {
		return ""
	}
	return v
}

// readOnly refuses every method but GET and HEAD, as 405.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			webErr(w, r, http.StatusMethodNotAllowed, classNotAllowed, "HTTP "+r.Method+" is not allowed: the NodeManager's web services are read-only")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// remoteException is YARN's error body.
type remoteException struct {
	RemoteException struct {
		Exception     string `json:"exception"`
		Message       string `json:"message"`
		JavaClassName string `json:"javaClassName"`
	} `json:"RemoteException"`
}

func webErr(w http.ResponseWriter, r *http.Request, status int, class, msg string) {
	var e remoteException
	e.RemoteException.Exception = class[strings.LastIndexByte(class, '.')+1:]
	e.RemoteException.Message = msg
	e.RemoteException.JavaClassName = class
	writeAnswer(w, r, status, e, "", "")
}

// nodeInfo is YARN's NodeInfo.
type nodeInfo struct {
	ID                             string `json:"id"`
	NodeHostName                   string `json:"nodeHostName"`
	TotalVmemAllocatedContainersMB int64  `json:"totalVmemAllocatedContainersMB"`
	TotalPmemAllocatedContainersMB int64  `json:"totalPmemAllocatedContainersMB"`
	TotalVCoresAllocatedContainers int64  `json:"totalVCoresAllocatedContainers"`
	VmemCheckEnabled               bool   `json:"vmemCheckEnabled"`
	PmemCheckEnabled               bool   `json:"pmemCheckEnabled"`
	LastNodeUpdateTime             int64  `json:"lastNodeUpdateTime"`
	NMStartupTime                  int64  `json:"nmStartupTime"`
	HealthReport                   string `json:"healthReport"`
	NodeHealthy                    bool   `json:"nodeHealthy"`
	NodeManagerVersion             string `json:"nodeManagerVersion"`
	NodeManagerBuildVersion        string `json:"nodeManagerBuildVersion"`
	NodeManagerVersionBuiltOn      string `json:"nodeManagerVersionBuiltOn"`
	HadoopVersion                  string `json:"hadoopVersion"`
	HadoopBuildVersion             string `json:"hadoopBuildVersion"`
	HadoopVersionBuiltOn           string `json:"hadoopVersionBuiltOn"`
}

func (n *NodeManager) wsNodeInfo(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	health := n.lastHealth
	n.mu.Unlock()
	if health == nil {
		health = n.healthStatus()
	}
	pmem := int64(n.cfg.Resource[fairness.Memory])
	info := nodeInfo{ID: n.nodeKey, NodeHostName: n.nodeID.GetHost(),
		TotalPmemAllocatedContainersMB: pmem, TotalVmemAllocatedContainersMB: int64(float64(pmem) * vmemPmemRatio),
		TotalVCoresAllocatedContainers: int64(n.cfg.Resource[fairness.VCores]), PmemCheckEnabled: n.cfg.PmemCheck,
		LastNodeUpdateTime: health.GetLastHealthReportTime(), NMStartupTime: n.startedAt.UnixMilli(),
		HealthReport: health.GetHealthReport(), NodeHealthy: health.GetIsNodeHealthy(),
		NodeManagerVersion: Version, NodeManagerBuildVersion: Version, NodeManagerVersionBuiltOn: "",
		HadoopVersion: Version, HadoopBuildVersion: Version, HadoopVersionBuiltOn: ""}
	writeOK(w, r, struct {
		NodeInfo nodeInfo `json:"nodeInfo"`
	}{info})
}

// appInfo is YARN's NM AppInfo.
type appInfo struct {
	ID           string   `json:"id"`
	State        string   `json:"state"`
	User         string   `json:"user"`
	ContainerIDs []string `json:"containerids,omitempty"`
}

// appState is the application's state as YARN's NM names it. Callers
// hold mu.
func (a *application) webState() string {
	if !a.cleaning {
		return "RUNNING"
	}
	for _, c := range a.conts {
		if c.state != stateDone {
			return "FINISHING_CONTAINERS_WAIT"
		}
	}
	return "APPLICATION_RESOURCES_CLEANINGUP"
}

// info is the application's appInfo. Callers hold mu.
func (a *application) info() appInfo {
	ai := appInfo{ID: a.idStr, State: a.webState(), User: a.user}
	for id := range a.conts {
		ai.ContainerIDs = append(ai.ContainerIDs, id)
	}
	slices.Sort(ai.ContainerIDs)
	return ai
}

var appStates = []string{"NEW", "INITING", "RUNNING", "FINISHING_CONTAINERS_WAIT", "APPLICATION_RESOURCES_CLEANINGUP", "FINISHED"}

func (n *NodeManager) wsApps(w http.ResponseWriter, r *http.Request) {
	state, user := r.URL.Query().Get("state"), r.URL.Query().Get("user")
	if state != "" && !slices.Contains(appStates, state) {
		webErr(w, r, http.StatusBadRequest, classWebBadRequest, fmt.Sprintf("Invalid Application State %s, valid ones are %s", state, strings.Join(appStates, ", ")))
		return
	}
	var apps []appInfo
	n.mu.Lock()
	for _, a := range n.sortedAppsLocked() {
		ai := a.info()
		if (state == "" || ai.State == state) && (user == "" || ai.User == user) {
			apps = append(apps, ai)
		}
	}
	n.mu.Unlock()
	// YARN writes an empty list as an empty object.
	writeOK(w, r, struct {
		Apps struct {
			App []appInfo `json:"app,omitempty"`
		} `json:"apps"`
	}{struct {
		App []appInfo `json:"app,omitempty"`
	}{apps}})
}

func (n *NodeManager) wsApp(w http.ResponseWriter, r *http.Request) {
	id := pathVar(r, "appid")
	if !appIDPattern.MatchString(id) {
		webErr(w, r, http.StatusBadRequest, classWebBadRequest, "Invalid ApplicationId prefix: "+id)
		return
	}
	n.mu.Lock()
	a := n.apps[id]
	var ai appInfo
	if a != nil {
		ai = a.info()
	}
	n.mu.Unlock()
	if a == nil {
		webErr(w, r, http.StatusNotFound, classWebNotFound, "app with id "+id+" not found")
		return
	}
	writeOK(w, r, struct {
		App appInfo `json:"app"`
	}{ai})
}

// containerInfo is YARN's NM ContainerInfo.
type containerInfo struct {
	ID                  string   `json:"id"`
	State               string   `json:"state"`
	ExitCode            int32    `json:"exitCode"`
	Diagnostics         string   `json:"diagnostics"`
	User                string   `json:"user"`
	TotalMemoryNeededMB int64    `json:"totalMemoryNeededMB"`
	TotalVCoresNeeded   int64    `json:"totalVCoresNeeded"`
	ExecutionType       string   `json:"executionType"`
	ContainerLogsLink   string   `json:"containerLogsLink"`
	NodeID              string   `json:"nodeId"`
	ContainerLogFiles   []string `json:"containerLogFiles"`
}

// webState is the container's state as YARN's NM names it. Callers hold
// mu.
func (c *container) webState() string {
	switch {
	case c.state == stateDone:
		return "DONE"
	case c.killing:
		return "KILLING"
	case c.state == stateRunning:
		return "RUNNING"
	default:
		return "LOCALIZING"
	}
}

// containerInfo snapshots a container; base is http://host:port of the
// request, which YARN builds the log link from. The log files are listed
// by the caller, without mu.
func (n *NodeManager) containerInfoLocked(c *container, base string) containerInfo {
	st := c.status()
	return containerInfo{ID: c.idStr, State: c.webState(), ExitCode: st.GetExitStatus(), Diagnostics: st.GetDiagnostics(),
		User: c.user, TotalMemoryNeededMB: c.resource.GetMemory(), TotalVCoresNeeded: int64(c.resource.GetVirtualCores()),
		ExecutionType: "GUARANTEED", ContainerLogsLink: base + "/node/containerlogs/" + c.idStr + "/" + c.user,
		NodeID: n.nodeKey}
}

func requestBase(r *http.Request) string {
	return "http://" + r.Host
}

func (n *NodeManager) wsContainers(w http.ResponseWriter, r *http.Request) {
	base := requestBase(r)
	var infos []containerInfo
	var dirs [][]string
	n.mu.Lock()
	for _, c := range n.sortedContainersLocked() {
		infos = append(infos, n.containerInfoLocked(c, base))
		dirs = append(dirs, c.logDirs)
	}
	n.mu.Unlock()
	for i := range infos {
		infos[i].ContainerLogFiles = logFileNames(listLogFiles(dirs[i]))
	}
	writeOK(w, r, struct {
		Containers struct {
			Container []containerInfo `json:"container,omitempty"`
		} `json:"containers"`
	}{struct {
		Container []containerInfo `json:"container,omitempty"`
	}{infos}})
}

// checkContainerID answers 400 for what is no container id, as YARN.
func checkContainerID(w http.ResponseWriter, r *http.Request, id string) bool {
	if !containerIDPattern.MatchString(id) {
		webErr(w, r, http.StatusBadRequest, classWebBadRequest, "invalid container id, "+id)
		return false
	}
	return true
}

func (n *NodeManager) wsContainer(w http.ResponseWriter, r *http.Request) {
	id := pathVar(r, "containerid")
	if !checkContainerID(w, r, id) {
		return
	}
	n.mu.Lock()
	c := n.containers[id]
	var info containerInfo
	var dirs []string
	if c != nil {
		info, dirs = n.containerInfoLocked(c, requestBase(r)), c.logDirs
	}
	n.mu.Unlock()
	if c == nil {
		webErr(w, r, http.StatusNotFound, classWebNotFound, "container with id, "+id+", not found")
		return
	}
	info.ContainerLogFiles = logFileNames(listLogFiles(dirs))
	writeOK(w, r, struct {
		Container containerInfo `json:"container"`
	}{info})
}

// logFile is one of a container's log files.
type logFile struct {
	name string
	path string
	size int64
	mod  time.Time
}

func logFileNames(fs []logFile) []string {
	names := make([]string, 0, len(fs))
	for _, f := range fs {
		names = append(names, f.name)
	}
	return names
}

// listLogFiles lists the regular files in a container's log dirs (one per
// NM log dir), by name; a name in two dirs is the first dir's.
func listLogFiles(dirs []string) []logFile {
	var out []logFile
	seen := map[string]bool{}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if seen[e.Name()] || !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			seen[e.Name()] = true
			out = append(out, logFile{name: e.Name(), path: filepath.Join(d, e.Name()), size: fi.Size(), mod: fi.ModTime()})
		}
	}
	slices.SortFunc(out, func(a, b logFile) int { return strings.Compare(a.name, b.name) })
	return out
}

// containerLogDirs finds a container's log dirs and user: a container the
// NM knows, else one it has forgotten whose logs are still on disk (they
// stay after the application ends). ok is false when neither.
func (n *NodeManager) containerLogDirs(id string) (dirs []string, user string, ok bool) {
	n.mu.Lock()
	if c := n.containers[id]; c != nil {
		dirs, user = c.logDirs, c.user
	}
	n.mu.Unlock()
	if dirs != nil {
		return dirs, user, true
	}
	m := containerIDPattern.FindStringSubmatch(id)
	if m == nil {
		return nil, "", false
	}
	app := "application_" + m[1] + "_" + m[2]
	for _, d := range n.cfg.LogDirs {
		p := filepath.Join(d, app, id)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			dirs = append(dirs, p)
		}
	}
	return dirs, "", len(dirs) > 0
}

// validLogName refuses what could leave the container's log dir.
func validLogName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00") && !strings.Contains(name, "..")
}

// containerLogsInfo is YARN's ContainerLogsInfo, for the local logs.
type containerLogsInfo struct {
	ContainerLogInfo   []containerLogFileInfo `json:"containerLogInfo"`
	LogAggregationType string                 `json:"logAggregationType"`
	ContainerID        string                 `json:"containerId"`
	NodeID             string                 `json:"nodeId"`
}

// containerLogFileInfo is YARN's ContainerLogFileInfo: its size is a
// string, its time as Hadoop's Times.format writes it.
type containerLogFileInfo struct {
	FileName         string `json:"fileName"`
	FileSize         string `json:"fileSize"`
	LastModifiedTime string `json:"lastModifiedTime"`
}

const hadoopTimeFormat = "Mon Jan 02 15:04:05 -0700 2006"

func (n *NodeManager) wsContainerLogs(w http.ResponseWriter, r *http.Request) {
	id := pathVar(r, "containerid")
	if !checkContainerID(w, r, id) {
		return
	}
	dirs, _, ok := n.containerLogDirs(id)
	if !ok {
		webErr(w, r, http.StatusNotFound, classWebNotFound, "container with id, "+id+", not found")
		return
	}
	info := containerLogsInfo{ContainerLogInfo: []containerLogFileInfo{}, LogAggregationType: "LOCAL", ContainerID: id, NodeID: n.nodeKey}
	for _, f := range listLogFiles(dirs) {
		info.ContainerLogInfo = append(info.ContainerLogInfo, containerLogFileInfo{FileName: f.name,
			FileSize: strconv.FormatInt(f.size, 10), LastModifiedTime: f.mod.Format(hadoopTimeFormat)})
	}
	// YARN answers a list: the local logs, then any aggregated ones
	// (Loom aggregates none).
	writeAnswer(w, r, http.StatusOK, []containerLogsInfo{info}, "containerLogsInfoes", "containerLogsInfo")
}

func (n *NodeManager) wsContainerLogFile(w http.ResponseWriter, r *http.Request) {
	n.serveLogFile(w, r, pathVar(r, "containerid"), pathVar(r, "filename"))
}

// serveLogFile writes one log file as text/plain. ?size=N gives its first
// N bytes, ?size=-N its last N, as YARN's.
func (n *NodeManager) serveLogFile(w http.ResponseWriter, r *http.Request, id, name string) {
	if !checkContainerID(w, r, id) {
		return
	}
	if !validLogName(name) {
		webErr(w, r, http.StatusBadRequest, classWebBadRequest, fmt.Sprintf("invalid log file name %q: a name in the container's log dir, without path separators or ..", name))
		return
	}
	var size int64
	var limited bool
	if s := r.URL.Query().Get("size"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			webErr(w, r, http.StatusBadRequest, classWebBadRequest, "size "+strconv.Quote(s)+" is not a number")
			return
		}
		size, limited = v, true
	}
	dirs, _, ok := n.containerLogDirs(id)
	if !ok {
		webErr(w, r, http.StatusNotFound, classWebNotFound, "Container "+id+" is unknown on this node, and has no logs here")
		return
	}
	var f *os.File
	for _, d := range dirs {
		// A container can write its log dir: a symlink it left there is
		// not followed out of it.
		file, err := os.OpenFile(filepath.Join(d, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if errors.Is(err, syscall.ELOOP) {
			continue
		}
		if err == nil {
			if st, err := file.Stat(); err == nil && st.Mode().IsRegular() {
				f = file
				break
			}
			file.Close()
		} else if !errors.Is(err, fs.ErrNotExist) {
			webErr(w, r, http.StatusInternalServerError, classWebAppFailure, fmt.Sprintf("cannot read %s of %s: %v", name, id, err))
			return
		}
	}
	if f == nil {
		webErr(w, r, http.StatusNotFound, classWebNotFound, "Cannot find this log on the local disk: "+name+" of "+id)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		webErr(w, r, http.StatusInternalServerError, classWebAppFailure, err.Error())
		return
	}
	start, length := int64(0), st.Size()
	if limited {
		switch {
		case size >= 0 && size < length:
			length = size
		case size < 0 && -size < length:
			start, length = length+size, -size
		}
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		webErr(w, r, http.StatusInternalServerError, classWebAppFailure, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.FormatInt(length, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	io.Copy(w, io.LimitReader(f, length))
}

// uiContainerLogs is the page the RM's UI links a container's logs to: a
// list of its log files, each linking to its content.
func (n *NodeManager) uiContainerLogs(w http.ResponseWriter, r *http.Request) {
	id, user := pathVar(r, "containerid"), pathVar(r, "user")
	if !containerIDPattern.MatchString(id) {
		http.Error(w, "invalid container id, "+id, http.StatusBadRequest)
		return
	}
	dirs, _, ok := n.containerLogDirs(id)
	if !ok {
		http.Error(w, "Unknown container "+id+": it has not started on this node, or its logs are gone", http.StatusNotFound)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Logs of %s</title></head><body>\n<h1>Logs of %s</h1>\n<ul>\n",
		html.EscapeString(id), html.EscapeString(id))
	for _, f := range listLogFiles(dirs) {
		fmt.Fprintf(&b, "<li><a href=\"/node/containerlogs/%s/%s/%s\">%s</a> (%d bytes)</li>\n",
			html.EscapeString(id), html.EscapeString(url.PathEscape(user)), html.EscapeString(url.PathEscape(f.name)), html.EscapeString(f.name), f.size)
	}
	b.WriteString("</ul>\n</body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	io.WriteString(w, b.String())
}

// uiContainerLogFile is one log file as plain text, from the log page.
func (n *NodeManager) uiContainerLogFile(w http.ResponseWriter, r *http.Request) {
	n.serveLogFile(w, r, pathVar(r, "containerid"), pathVar(r, "filename"))
}
