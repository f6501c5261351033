package evals

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/tasks"
)

// OnlineGraders are the graders that grade live answers: rule graders of the answer's text. The
// judge, which costs a model call, is left out.
var OnlineGraders = []string{GraderExact, GraderContains, GraderRegex, GraderSchema}

// Bounds of online grading's report.
const (
	DefaultOnlineDays = 30
	MaxOnlineDays     = 366
)

// onlineInput stands in for the end user's message in a case of online grading: the graders
// compare the answer alone.
const onlineInput = "(live conversation)"

// CheckOnline checks an agent's online grading before it is set: rate 0 (removing it) is fine;
// else the rate is at most 1 and criteria, a case without input, names online graders (or
// gives what some of them compare with).
func CheckOnline(rate float64, criteria Case) error {
	if rate == 0 {
		return nil
	}
	if rate < 0 || rate > 1 {
		return apperr.Invalidf("online_eval.rate", "must be from 0 to 1")
	}
	if criteria.Input != "" || len(criteria.Conversation) > 0 {
		return apperr.Invalidf("online_eval.criteria", "grades live answers: it has no input or conversation")
	}
	criteria.Input = onlineInput
	if err := criteria.Validate("online_eval.criteria"); err != nil {
		return err
	}
	var p apperr.Problems
	for i, name := range criteria.Graders {
		if !slices.Contains(OnlineGraders, name) {
			p.Add(fmt.Sprintf("online_eval.criteria.graders[%d]", i), "grades live answers as one of %s", strings.Join(OnlineGraders, ", "))
		}
	}
	return p.Err()
}

// OnlineGrade is the grading of one live answer, stored under the answer's message id.
type OnlineGrade struct {
	MessageID string `json:"message_id" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	BotID     string `json:"bot_id" bson:"bot_id"`
	ChatID    string `json:"chat_id" bson:"chat_id"`
	Version   int    `json:"version" bson:"version"`
	// At is when the answer was written; Day its day (UTC).
	At       time.Time `json:"at" bson:"at"`
	Day      string    `json:"day" bson:"day"`
	GradedAt time.Time `json:"graded_at" bson:"graded_at"`
	Grades   []Grade   `json:"grades" bson:"grades"`
}

// OnlineRepo keeps the gradings of live answers.
type OnlineRepo interface {
	// PutOnline stores g, replacing an earlier grading of its message.
	PutOnline(ctx context.Context, g OnlineGrade) error
	// OnlineGradings are the agent's gradings from day since on (their day, version and grades).
	OnlineGradings(ctx context.Context, projectID, botID, since string) ([]OnlineGrade, error)
}

// Online grades a share of agents' live answers, in workers, and reports their pass rates.
type Online struct {
	repo  OnlineRepo
	queue tasks.Queue
	now   func() time.Time
}

// NewOnline returns the online grading service.
func NewOnline(repo OnlineRepo, queue tasks.Queue) *Online {
	return &Online{repo: repo, queue: queue, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Sampled queues the grading of a live answer.
func (s *Online) Sampled(ctx context.Context, p tasks.OnlineEvalPayload) error {
	return s.queue.Enqueue(ctx, tasks.NewOnlineEvalTask(p))
}

// Grade grades the answer p carries by its criteria and stores the grades.
func (s *Online) Grade(ctx context.Context, p tasks.OnlineEvalPayload) error {
	var c Case
	if err := json.Unmarshal(p.Criteria, &c); err != nil {
		return apperr.Invalidf("criteria", "cannot be read: %s", err.Error())
	}
	c.Input = onlineInput
	now := s.now()
	return s.repo.PutOnline(ctx, OnlineGrade{MessageID: p.MessageID, ProjectID: p.ProjectID, BotID: p.BotID, ChatID: p.ChatID,
		Version: p.Version, At: p.At.UTC(), Day: p.At.UTC().Format(time.DateOnly), GradedAt: now, Grades: c.Grade(Answer{Text: p.Answer})})
}

// OnlineRate is a grader's pass rate over the live answers of a day or of a version.
type OnlineRate struct {
	Day      string  `json:"day,omitempty"`
	Version  int     `json:"version,omitempty"`
	Grader   string  `json:"grader"`
	Graded   int     `json:"graded"`
	Passed   int     `json:"passed"`
	PassRate float64 `json:"pass_rate"`
}

// OnlineReport is the agent's online pass rates of the last days: per grader and day, and per
// grader and version.
type OnlineReport struct {
	Since     string       `json:"since"`
	ByDay     []OnlineRate `json:"by_day"`
	ByVersion []OnlineRate `json:"by_version"`
}

// Rates reports the agent's online pass rates of the last days (today counts).
func (s *Online) Rates(ctx context.Context, projectID, botID string, days int) (OnlineReport, error) {
	if days < 1 || days > MaxOnlineDays {
		return OnlineReport{}, apperr.Invalidf("days", "must be from 1 to %d", MaxOnlineDays)
	}
	since := s.now().AddDate(0, 0, 1-days).Format(time.DateOnly)
	gradings, err := s.repo.OnlineGradings(ctx, projectID, botID, since)
	if err != nil {
		return OnlineReport{}, err
	}
	return OnlineReport{Since: since,
		ByDay:     onlineRates(gradings, func(g OnlineGrade) OnlineRate { return OnlineRate{Day: g.Day} }),
		ByVersion: onlineRates(gradings, func(g OnlineGrade) OnlineRate { return OnlineRate{Version: g.Version} }),
	}, nil
}

// onlineRates sums each grader's grades by the day or version keyOf gives each grading, in
// order of day or version, then of grader.
func onlineRates(gradings []OnlineGrade, keyOf func(OnlineGrade) OnlineRate) []OnlineRate {
	sums := map[OnlineRate]*OnlineRate{}
	out := []OnlineRate{}
	for _, g := range gradings {
		for _, grade := range g.Grades {
			k := keyOf(g)
			k.Grader = grade.Grader
			sum := sums[k]
			if sum == nil {
				sum = &OnlineRate{Day: k.Day, Version: k.Version, Grader: k.Grader}
				sums[k] = sum
			}
			sum.Graded++
			if grade.Pass {
				sum.Passed++
			}
		}
	}
	for _, r := range sums {
		r.PassRate = float64(r.Passed) / float64(r.Graded)
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b OnlineRate) int {
		return cmp.Or(strings.Compare(a.Day, b.Day), a.Version-b.Version, strings.Compare(a.Grader, b.Grader))
	})
	return out
}
