package chats

import (
	"context"
	"strings"

	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/workspaces"
)

// Workspaces find the agents' workspaces that chats of chat_mode edit edit (shared/workspaces
// implements it).
type Workspaces interface {
	// Get is the agent's workspace idOrUUID: NotFound when the agent has none such.
	Get(ctx context.Context, projectID, botID, idOrUUID string) (workspaces.Workspace, error)
}

// UseWorkspaces gives the service the workspaces that turns of chat_mode edit edit. The
// composition root calls it once both exist.
func (s *Service) UseWorkspaces(w Workspaces) { s.spaces = w }

// editing reports whether a turn of in, in chat, is of chat_mode edit: the mode the request
// names, else the chat's default.
func editing(in Input, chat Chat) bool {
	mode := in.ChatMode
	if !in.modeNamed && chat.Mode != "" {
		mode = chat.Mode
	}
	return mode == "edit"
}

// workspaceFor is the uuid of the workspace a turn of in, in chat, edits: for a turn of
// chat_mode edit, the workspace the request names, found among the agent's (another's is not
// found, whatever its project or account), and then kept on the chat; else the one the chat
// keeps. Turns of other modes edit none.
func (s *Service) workspaceFor(ctx context.Context, projectID, botID string, chat *Chat, isNew bool, in Input) (string, error) {
	if !editing(in, *chat) {
		return "", nil
	}
	named := strings.TrimSpace(in.WorkspaceUUID)
	if named == "" {
		return chat.Workspace, nil
	}
	w, err := s.spaces.Get(ctx, projectID, botID, named)
	if err != nil {
		return "", err
	}
	if w.UUID == chat.Workspace {
		return w.UUID, nil
	}
	chat.Workspace = w.UUID
	if !isNew {
		ev := chatEvents.New(ctx, outbox.ChatUpdated, projectID, botID, *chat)
		if err := s.repo.SetChat(ctx, chat.UUID, map[string]any{"workspace": w.UUID}, ev); err != nil {
			return "", err
		}
		s.events.Dispatch(ctx, outbox.Ref{Resource: RecordResource, ID: chat.UUID}, ev)
	}
	return w.UUID, nil
}
