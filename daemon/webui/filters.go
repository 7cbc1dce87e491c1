package webui

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// appsFilter is the query of GET /ws/v1/cluster/apps, with YARN's
// parameters and meanings. The server filters the Backend's reports
// itself, so every parameter means here what it means in YARN.
type appsFilter struct {
	states      []pb.YarnApplicationStateProto // any of them; none: all
	finalStatus *pb.FinalApplicationStatusProto
	user        string
	queue       string
	name        string
	limit       int64 // 0: no limit
	// Ranges are closed; an unfinished app's finish time is 0, as in
	// YARN.
	startBegin, startEnd   int64
	finishBegin, finishEnd int64
	types                  []string // lower case
	tags                   []string // lower case; an app matches with any one
}

// appStateNames lists YARN's application states in their order.
func appStateNames() string {
	names := make([]string, 0, len(pb.YarnApplicationStateProto_name))
	for v := int32(1); v <= int32(len(pb.YarnApplicationStateProto_name)); v++ {
		names = append(names, pb.YarnApplicationStateProto_name[v])
	}
	return strings.Join(names, ", ")
}

// finalStatusNames lists YARN's final statuses.
func finalStatusNames() string {
	names := make([]string, 0, len(pb.FinalApplicationStatusProto_name))
	for v := int32(0); v < int32(len(pb.FinalApplicationStatusProto_name)); v++ {
		names = append(names, strings.TrimPrefix(pb.FinalApplicationStatusProto_name[v], "APP_"))
	}
	return strings.Join(names, ", ")
}

// commaList splits every value of a repeatable, comma-separated
// parameter, dropping empty items.
func commaList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func parseAppState(param, s string) (pb.YarnApplicationStateProto, error) {
	v, ok := pb.YarnApplicationStateProto_value[strings.ToUpper(strings.TrimSpace(s))]
	if !ok {
		return 0, badRequest("%s: invalid application state %q; valid states are %s", param, s, appStateNames())
	}
	return pb.YarnApplicationStateProto(v), nil
}

// parseTime reads a time parameter: ms since the epoch, not negative.
func parseTime(q url.Values, param string, def int64) (int64, error) {
	s := q.Get(param)
	if s == "" {
		return def, nil
	}
	t, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, badRequest("%s: %q is not a time in ms since the epoch", param, s)
	}
	if t < 0 {
		return 0, badRequest("%s must be greater than 0, got %d", param, t)
	}
	return t, nil
}

func parseAppsFilter(q url.Values) (appsFilter, error) {
	var f appsFilter
	// state is the deprecated single-state form; YARN reads it beside
	// states.
	for _, param := range []string{"states", "state"} {
		for _, s := range commaList(q[param]) {
			st, err := parseAppState(param, s)
			if err != nil {
				return f, err
			}
			if !slices.Contains(f.states, st) {
				f.states = append(f.states, st)
			}
		}
	}
	if s := strings.TrimSpace(q.Get("finalStatus")); s != "" {
		v, ok := pb.FinalApplicationStatusProto_value["APP_"+strings.ToUpper(s)]
		if !ok {
			return f, badRequest("finalStatus: invalid final status %q; valid statuses are %s", s, finalStatusNames())
		}
		fs := pb.FinalApplicationStatusProto(v)
		f.finalStatus = &fs
	}
	f.user = q.Get("user")
	f.queue = q.Get("queue")
	f.name = q.Get("name")
	if s := q.Get("limit"); s != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n <= 0 {
			return f, badRequest("limit: must be an integer greater than 0, got %q", s)
		}
		f.limit = n
	}
	var err error
	if f.startBegin, err = parseTime(q, "startedTimeBegin", 0); err != nil {
		return f, err
	}
	if f.startEnd, err = parseTime(q, "startedTimeEnd", 1<<63-1); err != nil {
		return f, err
	}
	if f.startBegin > f.startEnd {
		return f, badRequest("startedTimeEnd (%d) must not be before startedTimeBegin (%d)", f.startEnd, f.startBegin)
	}
	if f.finishBegin, err = parseTime(q, "finishedTimeBegin", 0); err != nil {
		return f, err
	}
	if f.finishEnd, err = parseTime(q, "finishedTimeEnd", 1<<63-1); err != nil {
		return f, err
	}
	if f.finishBegin > f.finishEnd {
		return f, badRequest("finishedTimeEnd (%d) must not be before finishedTimeBegin (%d)", f.finishEnd, f.finishBegin)
	}
	for _, t := range commaList(q["applicationTypes"]) {
		f.types = append(f.types, strings.ToLower(t))
	}
	for _, t := range commaList(q["applicationTags"]) {
		f.tags = append(f.tags, strings.ToLower(t))
	}
	return f, nil
}

// queueName drops the root of a queue's path: "root.etl" is "etl".
func queueName(q string) string { return strings.TrimPrefix(q, "root.") }

func (f appsFilter) match(r *pb.ApplicationReportProto) bool {
	if len(f.states) > 0 && !slices.Contains(f.states, r.GetYarnApplicationState()) {
		return false
	}
	if f.finalStatus != nil && r.GetFinalApplicationStatus() != *f.finalStatus {
		return false
	}
	if f.user != "" && r.GetUser() != f.user {
		return false
	}
	if f.queue != "" && queueName(r.GetQueue()) != queueName(f.queue) {
		return false
	}
	if f.name != "" && r.GetName() != f.name {
		return false
	}
	if st := r.GetStartTime(); st < f.startBegin || st > f.startEnd {
		return false
	}
	if ft := r.GetFinishTime(); ft < f.finishBegin || ft > f.finishEnd {
		return false
	}
	if len(f.types) > 0 && !slices.Contains(f.types, strings.ToLower(r.GetApplicationType())) {
		return false
	}
	if len(f.tags) > 0 && !slices.ContainsFunc(r.GetApplicationTags(), func(t string) bool {
		return slices.Contains(f.tags, strings.ToLower(t))
	}) {
		return false
	}
	return true
}
