package a2apeer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// result is what a remote agent answered so far: a message, or a task with its status and
// artifacts as its events built them.
type result struct {
	message *a2a.Message
	task    *a2a.Task
}

// take adds an answer or an event to r.
func (r *result) take(ev a2a.Event) {
	switch v := ev.(type) {
	case *a2a.Message:
		r.message = v
	case *a2a.Task:
		r.task = v
	case *a2a.TaskStatusUpdateEvent:
		r.ensure(v.TaskID, v.ContextID).Status = v.Status
	case *a2a.TaskArtifactUpdateEvent:
		t := r.ensure(v.TaskID, v.ContextID)
		for _, art := range t.Artifacts {
			if art.ID == v.Artifact.ID {
				if v.Append {
					art.Parts = append(art.Parts, v.Artifact.Parts...)
				} else {
					*art = *v.Artifact
				}
				return
			}
		}
		t.Artifacts = append(t.Artifacts, v.Artifact)
	}
}

// ensure is r's task, made from the ids of an event that came before it.
func (r *result) ensure(id a2a.TaskID, contextID string) *a2a.Task {
	if r.task == nil {
		r.task = &a2a.Task{ID: id, ContextID: contextID}
	}
	return r.task
}

// settled reports whether r is an answer to give back: a message, or a task that is over or
// waits for its caller.
func (r *result) settled() bool {
	if r.message != nil {
		return true
	}
	if r.task == nil {
		return false
	}
	s := r.task.Status.State
	return s.Terminal() || s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired
}

// text is r as the model reads it: the answer, each artifact, and the task's state and ids to go
// on with; failed says the task failed or was rejected.
func (r *result) text() (string, bool) {
	if r.message != nil {
		return joinLines(partsText(r.message.Parts), fmt.Sprintf("(context_id %s)", r.message.ContextID)), false
	}
	t := r.task
	var lines []string
	if t.Status.Message != nil {
		lines = append(lines, partsText(t.Status.Message.Parts))
	}
	for _, art := range t.Artifacts {
		text := partsText(art.Parts)
		if text == "" || slices.Contains(lines, text) {
			continue
		}
		if art.Name != "" {
			text = fmt.Sprintf("[artifact %s]\n%s", art.Name, text)
		}
		lines = append(lines, text)
	}
	state := t.Status.State
	switch state {
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		lines = append(lines, fmt.Sprintf("(the remote agent waits for %s: answer with task_id %s and context_id %s)",
			strings.TrimSuffix(stateName(state), "-required"), t.ID, t.ContextID))
	default:
		lines = append(lines, fmt.Sprintf("(task %s %s; context_id %s)", t.ID, stateName(state), t.ContextID))
	}
	return joinLines(lines...), state == a2a.TaskStateFailed || state == a2a.TaskStateRejected
}

// stateName is a task state as the spec words it in text (completed, input-required).
func stateName(s a2a.TaskState) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(string(s), "TASK_STATE_"), "_", "-"))
}

// partsText is the text of parts: text as it is, data as JSON, a file by its name and type.
func partsText(parts a2a.ContentParts) string {
	var out []string
	for _, p := range parts {
		switch v := p.Content.(type) {
		case a2a.Text:
			out = append(out, string(v))
		case a2a.Data:
			raw, _ := json.Marshal(v.Value)
			out = append(out, string(raw))
		case a2a.URL:
			out = append(out, fmt.Sprintf("[file %s (%s): %s]", p.Filename, p.MediaType, v))
		case a2a.Raw:
			out = append(out, fmt.Sprintf("[file %s (%s), %d bytes left out]", p.Filename, p.MediaType, len(v)))
		}
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func joinLines(lines ...string) string {
	var kept []string
	for _, l := range lines {
		if l != "" {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}
