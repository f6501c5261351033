package stats

import (
	"context"
	"strconv"
	"time"
)

// Graded is a live answer the agent's online grading graded (docs/evals.md#online): when it
// was written, the version that wrote it, and whether each grader passed it.
type Graded struct {
	At      time.Time
	Version int
	Passed  map[string]bool
}

// OnlineRepo reads the online gradings of the agent's answers written in [from, to).
type OnlineRepo interface {
	Gradings(ctx context.Context, projectID, botID string, from, to time.Time, each func(Graded) error) error
}

// UseOnline gives the service the online gradings. The composition root calls it once.
func (s *Service) UseOnline(o OnlineRepo) { s.online = o }

// PassRate is how one grader judged live answers.
type PassRate struct {
	Graded   int     `json:"graded"`
	Passed   int     `json:"passed"`
	PassRate float64 `json:"pass_rate"`
}

// OnlineRates are the pass rates of the agent's live answers graded online: how many answers
// were graded, each grader's pass rate, and each version's (its number in decimal) by grader:
// how a canary compares with the published version.
type OnlineRates struct {
	Answers  int                            `json:"answers"`
	Graders  map[string]PassRate            `json:"graders"`
	Versions map[string]map[string]PassRate `json:"versions"`
}

type onlineFigures struct{ r OnlineRates }

func newOnline() *onlineFigures {
	return &onlineFigures{r: OnlineRates{Graders: map[string]PassRate{}, Versions: map[string]map[string]PassRate{}}}
}

func (f *onlineFigures) add(g Graded) {
	f.r.Answers++
	v := strconv.Itoa(g.Version)
	if f.r.Versions[v] == nil {
		f.r.Versions[v] = map[string]PassRate{}
	}
	for grader, passed := range g.Passed {
		f.r.Graders[grader] = count(f.r.Graders[grader], passed)
		f.r.Versions[v][grader] = count(f.r.Versions[v][grader], passed)
	}
}

// count adds one grade to p.
func count(p PassRate, passed bool) PassRate {
	p.Graded++
	if passed {
		p.Passed++
	}
	p.PassRate = round(float64(p.Passed) / float64(p.Graded))
	return p
}

func (f *onlineFigures) result() OnlineRates { return f.r }

// Online is the pass rates of the agent's live answers written in w and graded online.
func (s *Service) Online(ctx context.Context, projectID, botID string, w Window) (Report[OnlineRates], error) {
	return gather(w, newOnline, func(each func(Graded) error) error {
		if s.online == nil {
			return nil
		}
		return s.online.Gradings(ctx, projectID, botID, w.From, w.To, each)
	}, func(g Graded) time.Time { return g.At })
}
