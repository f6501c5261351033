package evals

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// CheckGate checks a publish gate of the agent before it is set: a gate without a dataset
// (removing one) is fine; else its dataset is the agent's and its thresholds name graders with
// pass rates from 0 to 1.
func (s *Service) CheckGate(ctx context.Context, projectID, botID, datasetID string, thresholds map[string]float64) error {
	if strings.TrimSpace(datasetID) == "" {
		return nil
	}
	if err := checkThresholds("publish_gate.thresholds", thresholds); err != nil {
		return err
	}
	_, err := s.repo.Get(ctx, projectID, botID, strings.TrimSpace(datasetID))
	if apperr.IsNotFound(err) {
		return apperr.Invalidf("publish_gate.dataset_id", "is not a dataset of the agent")
	}
	return err
}

// Gate lets version of the agent be published when its newest finished run of the dataset
// reached every threshold; otherwise it is a Conflict (publish_gate_failed) naming each grader
// that fell short, or saying there is no such run.
func (s *Runs) Gate(ctx context.Context, projectID, botID, datasetID string, thresholds map[string]float64, version int) error {
	run, err := s.repo.LatestRun(ctx, projectID, botID, datasetID, version)
	if apperr.IsNotFound(err) {
		return apperr.New(apperr.Conflict, "publish_gate_no_run", fmt.Sprintf(
			"The agent publishes a version once an eval run of it on dataset %s passes; version %d has none finished. Start one with POST /v1/bot/eval/run/create.",
			datasetID, version))
	}
	if err != nil {
		return err
	}
	var failing []apperr.Detail
	names := make([]string, 0, len(thresholds))
	for name := range thresholds {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		want := thresholds[name]
		i := slices.IndexFunc(run.Graders, func(g GraderRate) bool { return g.Grader == name })
		switch {
		case i < 0 || run.Graders[i].Graded == 0:
			failing = append(failing, apperr.Detail{Field: name, Problem: "graded no case of the run"})
		case run.Graders[i].PassRate < want:
			failing = append(failing, apperr.Detail{Field: name, Problem: fmt.Sprintf("passed %d of %d cases (%.2f), below %.2f",
				run.Graders[i].Passed, run.Graders[i].Graded, run.Graders[i].PassRate, want)})
		}
	}
	if len(failing) == 0 {
		return nil
	}
	return &apperr.Error{Kind: apperr.Conflict, Code: "publish_gate_failed", Details: failing,
		Message: fmt.Sprintf("Eval run %s of version %d falls short of the publish gate in %d graders.", run.UUID, version, len(failing))}
}
