package evals

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// Resource names datasets in errors.
const Resource = "eval_dataset"

// MaxDatasetBytes bounds a dataset's cases together, whatever the request body limit.
const MaxDatasetBytes = 4 << 20

// Dataset is a named list of cases of an agent.
type Dataset struct {
	UUID      string `json:"uuid" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	BotID     string `json:"-" bson:"bot_id"`
	Name      string `json:"name" bson:"name"`
	CaseCount int    `json:"case_count" bson:"case_count"`
	// Cases are left out of lists.
	Cases     []Case    `json:"cases,omitempty" bson:"cases"`
	CreatedAt time.Time `json:"created_at" bson:"created_at"`
}

// Input is a dataset to create.
type Input struct {
	Name  string `json:"name"`
	Cases []Case `json:"cases"`
}

// Repo stores datasets. Get and Delete answer not found for a dataset of another agent.
type Repo interface {
	Insert(ctx context.Context, d Dataset) error
	Get(ctx context.Context, projectID, botID, id string) (Dataset, error)
	// List is a page of the agent's datasets, without their cases, oldest first.
	List(ctx context.Context, projectID, botID string, page paging.Page) ([]Dataset, int, error)
	Count(ctx context.Context, projectID, botID string) (int, error)
	Delete(ctx context.Context, projectID, botID, id string) error
}

// Service keeps agents' datasets.
type Service struct {
	repo       Repo
	transcript Transcript
	now        func() time.Time
}

// NewService returns the datasets' service.
func NewService(repo Repo) *Service {
	return &Service{repo: repo, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Create stores a dataset of the agent's, its cases validated first: a case refused stores
// nothing. An agent has at most MaxDatasets.
func (s *Service) Create(ctx context.Context, projectID, botID string, in Input) (Dataset, error) {
	return s.create(ctx, projectID, botID, in, func(i int) string { return fmt.Sprintf("cases[%d]", i) })
}

func (s *Service) create(ctx context.Context, projectID, botID string, in Input, field func(i int) string) (Dataset, error) {
	in.Name = strings.TrimSpace(in.Name)
	var p apperr.Problems
	switch {
	case in.Name == "":
		p.Add("name", "is required")
	case utf8.RuneCountInString(in.Name) > MaxNameLength:
		p.Add("name", "is at most %d characters", MaxNameLength)
	}
	if err := p.Err(); err != nil {
		return Dataset{}, err
	}
	if err := checkCases(in.Cases, field); err != nil {
		return Dataset{}, err
	}
	n, err := s.repo.Count(ctx, projectID, botID)
	if err != nil {
		return Dataset{}, err
	}
	if n >= MaxDatasets {
		return Dataset{}, apperr.New(apperr.Conflict, "eval_dataset_limit", fmt.Sprintf("An agent has at most %d datasets; delete one first.", MaxDatasets))
	}
	d := Dataset{UUID: ids.New(), ProjectID: projectID, BotID: botID, Name: in.Name, CaseCount: len(in.Cases), Cases: in.Cases, CreatedAt: s.now()}
	return d, s.repo.Insert(ctx, d)
}

// checkCases validates cases, naming each by field of its index.
func checkCases(cases []Case, field func(i int) string) error {
	if len(cases) == 0 {
		return apperr.Invalidf("cases", "at least one case is required")
	}
	if len(cases) > MaxCases {
		return apperr.New(apperr.TooLarge, "eval_dataset_too_large", fmt.Sprintf("A dataset has at most %d cases; this one has %d.", MaxCases, len(cases)))
	}
	total := 0
	for i := range cases {
		if err := cases[i].Validate(field(i)); err != nil {
			return err
		}
		total += cases[i].size()
	}
	if total > MaxDatasetBytes {
		return apperr.New(apperr.TooLarge, "eval_dataset_too_large", fmt.Sprintf("A dataset's cases are at most %d bytes together; these are %d.", MaxDatasetBytes, total))
	}
	return nil
}

// Import stores a dataset of the cases of jsonl, one JSON case a line (blank lines skipped). A
// line that is not a valid case is refused naming its number, and nothing is stored.
func (s *Service) Import(ctx context.Context, projectID, botID, name string, jsonl []byte) (Dataset, error) {
	var cases []Case
	sc := bufio.NewScanner(bytes.NewReader(jsonl))
	sc.Buffer(nil, len(jsonl)+1)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if len(cases) == MaxCases {
			return Dataset{}, apperr.New(apperr.TooLarge, "eval_dataset_too_large", fmt.Sprintf("A dataset has at most %d cases; line %d is one more.", MaxCases, line))
		}
		if len(text) > MaxCaseBytes {
			return Dataset{}, apperr.Invalidf(fmt.Sprintf("line %d", line), "is %d bytes; a case is at most %d bytes", len(text), MaxCaseBytes)
		}
		var c Case
		if err := json.Unmarshal(text, &c); err != nil {
			if ferr := apperr.JSONField(fmt.Sprintf("line %d", line), err); ferr != nil {
				return Dataset{}, ferr
			}
			return Dataset{}, apperr.Invalidf(fmt.Sprintf("line %d", line), "is not a JSON object: %s", err.Error())
		}
		c.origin = fmt.Sprintf("line %d", line)
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return Dataset{}, apperr.New(apperr.Malformed, "unreadable_body", "The JSONL body could not be read: "+err.Error())
	}
	return s.create(ctx, projectID, botID, Input{Name: name, Cases: cases}, func(i int) string { return cases[i].origin })
}

// Get is a dataset of the agent, with its cases.
func (s *Service) Get(ctx context.Context, projectID, botID, id string) (Dataset, error) {
	if strings.TrimSpace(id) == "" {
		return Dataset{}, apperr.Invalidf("dataset_id", "is required")
	}
	return s.repo.Get(ctx, projectID, botID, id)
}

// List is a page of the agent's datasets, without their cases.
func (s *Service) List(ctx context.Context, projectID, botID string, page paging.Page) ([]Dataset, int, error) {
	return s.repo.List(ctx, projectID, botID, page)
}

// Delete removes a dataset of the agent.
func (s *Service) Delete(ctx context.Context, projectID, botID, id string) error {
	if strings.TrimSpace(id) == "" {
		return apperr.Invalidf("dataset_id", "is required")
	}
	return s.repo.Delete(ctx, projectID, botID, id)
}
