package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// errRegression is the end of an eval whose candidate did worse than the version it is
// compared with, or fell short of a minimum: the command exits non-zero.
var errRegression = errors.New("regression")

// minimums are the --min flags: a grader's least pass rate, grader=rate.
type minimums map[string]float64

func (m minimums) String() string { return fmt.Sprint(map[string]float64(m)) }

func (m minimums) Set(s string) error {
	name, rate, ok := strings.Cut(s, "=")
	v, err := strconv.ParseFloat(rate, 64)
	if !ok || err != nil || v < 0 || v > 1 {
		return fmt.Errorf("%q is not grader=rate with a rate from 0 to 1", s)
	}
	m[strings.TrimSpace(name)] = v
	return nil
}

// evalCommand runs "eval": the cases of a JSONL file against an agent of a deployment, its
// candidate version (--version, the draft by default) and the version it is compared with
// (--against, the published one by default), both as eval runs; it prints a table of the
// graders' pass rates and the cases that now fail, and ends with errRegression when a grader
// passes fewer cases than against the other version, or fewer than its --min. The API key is
// AGENTPLANE_API_KEY, never a flag (flags land in logs and shell histories).
func evalCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("dataset", "", "JSONL file of eval cases, one a line (docs/evals.md)")
	agent := fs.String("agent", "", "the agent's id or uuid")
	project := fs.String("project", getenv("AGENTPLANE_PROJECT"), "the agent's project id (AGENTPLANE_PROJECT)")
	candidate := fs.String("version", "draft", "the version evaluated: draft, published or a number")
	against := fs.String("against", "published", "the version it is compared with: published, draft or a number")
	base := fs.String("url", cmp.Or(getenv("AGENTPLANE_URL"), "http://localhost:8080"), "the deployment's base URL (AGENTPLANE_URL)")
	wait := fs.Duration("timeout", 30*time.Minute, "how long to wait for the runs")
	poll := fs.Duration("poll", 2*time.Second, "how often to look at the runs")
	mins := minimums{}
	fs.Var(mins, "min", "a grader's least pass rate, grader=rate (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	key := getenv("AGENTPLANE_API_KEY")
	if *file == "" || *agent == "" || key == "" {
		return fmt.Errorf("usage: AGENTPLANE_API_KEY=KEY agentplane eval --dataset FILE --agent ID [--project ID] [--against published] [--min grader=rate]")
	}
	cases, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	c := evalClient{base: strings.TrimRight(*base, "/"), key: key, project: *project, bot: *agent, http: &http.Client{Timeout: time.Minute}}
	var dataset struct{ Dataset struct{ UUID string } }
	name := fmt.Sprintf("agentplane eval %s %s", filepath.Base(*file), time.Now().UTC().Format(time.RFC3339))
	if err := c.call(ctx, "POST", "/v1/bot/eval/dataset/import", url.Values{"name": {name}}, cases, &dataset); err != nil {
		return err
	}
	defer func() {
		_ = c.call(context.WithoutCancel(ctx), "DELETE", "/v1/bot/eval/dataset/delete", url.Values{"dataset_id": {dataset.Dataset.UUID}}, nil, nil)
	}()
	runs := make([]string, 2)
	for i, v := range []string{*candidate, *against} {
		var started struct{ Run struct{ UUID string } }
		body, err := json.Marshal(map[string]any{"project_id": c.project, "bot_id": c.bot, "dataset_id": dataset.Dataset.UUID, "version": v})
		if err != nil {
			return err
		}
		if err := c.call(ctx, "POST", "/v1/bot/eval/run/create", nil, body, &started); err != nil {
			return err
		}
		runs[i] = started.Run.UUID
	}
	baseline, err := c.finished(ctx, runs[1], "", *poll)
	if err != nil {
		return err
	}
	got, err := c.finished(ctx, runs[0], runs[1], *poll)
	if err != nil {
		return err
	}
	return report(stdout, got, baseline, mins)
}

// evalReport is what the command reads of a run.
type evalReport struct {
	Run struct {
		UUID    string
		Version int
		Status  string
		Graders []struct {
			Grader         string
			Graded, Passed int
			PassRate       float64 `json:"pass_rate"`
		}
	}
	Changed []struct {
		Index  int
		Input  string
		Broken []string
	}
}

// rate is the pass rate of the run's grader, and whether it graded a case.
func (r evalReport) rate(grader string) (float64, string, bool) {
	for _, g := range r.Run.Graders {
		if g.Grader == grader && g.Graded > 0 {
			return g.PassRate, fmt.Sprintf("%d/%d %.2f", g.Passed, g.Graded, g.PassRate), true
		}
	}
	return 0, "-", false
}

// report prints the graders' pass rates of got against baseline and the cases that now fail,
// and is errRegression when a grader did worse than against baseline or than its minimum.
func report(w io.Writer, got, baseline evalReport, mins minimums) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "grader\tversion %d (against)\tversion %d\tmin\t\n", baseline.Run.Version, got.Run.Version)
	regressions := 0
	seen := map[string]bool{}
	for _, g := range got.Run.Graders {
		seen[g.Grader] = true
		now, nowText, _ := got.rate(g.Grader)
		before, beforeText, had := baseline.rate(g.Grader)
		least, hasMin := mins[g.Grader]
		minText, verdict := "-", "ok"
		if hasMin {
			minText = fmt.Sprintf("%.2f", least)
		}
		if (had && now < before) || (hasMin && now < least) {
			verdict = "REGRESSION"
			regressions++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.Grader, beforeText, nowText, minText, verdict)
	}
	for name, least := range mins {
		if !seen[name] {
			fmt.Fprintf(tw, "%s\t-\t-\t%.2f\tREGRESSION (graded no case)\n", name, least)
			regressions++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range got.Changed {
		if len(c.Broken) > 0 {
			fmt.Fprintf(w, "case %d %q now fails %s\n", c.Index, c.Input, strings.Join(c.Broken, ", "))
		}
	}
	if regressions > 0 {
		return fmt.Errorf("%w: %d graders did worse (run %s against run %s)", errRegression, regressions, got.Run.UUID, baseline.Run.UUID)
	}
	return nil
}

// evalClient calls a deployment's agent API as one agent's.
type evalClient struct {
	base, key, project, bot string
	http                    *http.Client
}

// call sends body (JSONL for an import, else JSON) to path with q and the agent's scope, and
// decodes the answer into out; a non-2xx answer is an error carrying its message.
func (c evalClient) call(ctx context.Context, method, path string, q url.Values, body []byte, out any) error {
	if q == nil {
		q = url.Values{}
	}
	q.Set("bot_id", c.bot)
	if c.project != "" {
		q.Set("project_id", c.project)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path+"?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		if strings.HasSuffix(path, "/import") {
			req.Header.Set("Content-Type", "application/x-ndjson")
		}
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		var e struct{ Message string }
		_ = json.Unmarshal(raw, &e)
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, cmp.Or(e.Message, strings.TrimSpace(string(raw))))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// finished polls the run until it is done and returns it (against baseline, when given).
func (c evalClient) finished(ctx context.Context, id, baseline string, poll time.Duration) (evalReport, error) {
	q := url.Values{"run_id": {id}}
	if baseline != "" {
		q.Set("baseline", baseline)
	}
	for {
		var r evalReport
		if err := c.call(ctx, "GET", "/v1/bot/eval/run/read", q, nil, &r); err != nil {
			return evalReport{}, err
		}
		if r.Run.Status == "succeeded" {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return evalReport{}, fmt.Errorf("eval run %s not done in time: %w", id, ctx.Err())
		case <-time.After(poll):
		}
	}
}
