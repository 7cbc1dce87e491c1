package mini

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"

	"github.com/loomrm/loom/daemon/webui/dao"
)

// Placements reads from the RM's /ws/v1/loom/scheduler where it placed
// every container it granted against its ask's locality: node-local,
// rack-local, off-switch, or any for asks that named no host or rack.
func Placements(ctx context.Context, webAddr string) (dao.Placements, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+webAddr+"/ws/v1/loom/scheduler", nil)
	if err != nil {
		return dao.Placements{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return dao.Placements{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return dao.Placements{}, fmt.Errorf("GET /ws/v1/loom/scheduler: %s", resp.Status)
	}
	var s dao.Scheduler
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return dao.Placements{}, fmt.Errorf("GET /ws/v1/loom/scheduler: %w", err)
	}
	return s.Placements, nil
}

// WritePlacements prints a run's placements under policy (the name the
// summary gives it): the node-local, rack-local and off-switch shares,
// with their counts, of the containers whose asks named hosts or racks,
// as the simulator reports them for the tasks that read an input, and
// those asked for without locality (any) apart. When no ask named a host
// or rack it says that locality did not apply, rather than print 0%
// node-local.
func WritePlacements(w io.Writer, policy string, p dao.Placements) error {
	switch {
	case p.WithLocality+p.Any == 0:
		_, err := fmt.Fprintf(w, "placement (%s): no container was granted\n", policy)
		return err
	case p.WithLocality == 0:
		_, err := fmt.Fprintf(w, "placement (%s): no ask named a host or rack, so locality did not apply: all %d containers went anywhere (any)\n",
			policy, p.Any)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "placement\tnode-local\track-local\toff-switch\twith locality\tany\n")
	fmt.Fprintf(tw, "%s\t%.1f%% (%d)\t%.1f%% (%d)\t%.1f%% (%d)\t%d\t%d\n", policy, 100*p.NodeLocalShare, p.NodeLocal,
		100*p.RackLocalShare, p.RackLocal, 100*p.OffSwitchShare, p.OffSwitch, p.WithLocality, p.Any)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "(shares of the %d containers whose asks named hosts or racks; the %d any asked for none, AMs' included)\n",
		p.WithLocality, p.Any)
	return err
}
