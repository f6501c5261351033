package workspaces

import (
	"archive/zip"
	"context"
	"encoding/base64"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/keylock"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// Service keeps agents' workspaces and their files.
type Service struct {
	repo    Repo
	names   Names
	domains Domains
	now     func() time.Time
	writes  keylock.Locks // file writes of this process, one at a time per file
}

// NewService returns the workspace service; names says which subdomains and domains the
// deployment's other sites have (nil: none), domains how custom domains are checked.
func NewService(repo Repo, names Names, domains Domains) *Service {
	return &Service{repo: repo, names: names, domains: domains, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Create makes a workspace of the agent named name; an agent has at most MaxPerAgent.
func (s *Service) Create(ctx context.Context, projectID, botID, name string) (Workspace, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return Workspace{}, apperr.Invalidf("name", "is required")
	case utf8.RuneCountInString(name) > MaxNameLength:
		return Workspace{}, apperr.Invalidf("name", "must be at most %d characters", MaxNameLength)
	}
	n, err := s.repo.Count(ctx, projectID, botID)
	if err != nil {
		return Workspace{}, err
	}
	if n >= MaxPerAgent {
		return Workspace{}, apperr.New(apperr.Conflict, "workspace_limit",
			"The agent has "+itoa(MaxPerAgent)+" workspaces, the most it can have: delete one first.")
	}
	now := s.now()
	w := Workspace{ID: ids.ObjectID(), UUID: ids.New(), ProjectID: projectID, BotID: botID, Name: name, CreatedAt: now, UpdatedAt: now}
	return w, s.repo.Insert(ctx, w)
}

// Get is the agent's workspace idOrUUID.
func (s *Service) Get(ctx context.Context, projectID, botID, idOrUUID string) (Workspace, error) {
	if strings.TrimSpace(idOrUUID) == "" {
		return Workspace{}, apperr.Invalidf("workspace_uuid", "is required")
	}
	return s.repo.Get(ctx, projectID, botID, strings.TrimSpace(idOrUUID))
}

// List is a page of the agent's workspaces, oldest first.
func (s *Service) List(ctx context.Context, projectID, botID string, page paging.Page) ([]Workspace, int, error) {
	return s.repo.List(ctx, projectID, botID, page)
}

// Delete removes the agent's workspace idOrUUID and its files.
func (s *Service) Delete(ctx context.Context, projectID, botID, idOrUUID string) error {
	w, err := s.Get(ctx, projectID, botID, idOrUUID)
	if err != nil {
		return err
	}
	return s.repo.Delete(ctx, projectID, w.ID)
}

// Files lists the workspace's files by path, without their contents.
func (s *Service) Files(ctx context.Context, w Workspace) ([]FileInfo, error) {
	list, err := s.repo.Files(ctx, w.ProjectID, w.ID)
	for i := range list {
		list[i].ContentType = TypeOf(list[i].Path).ContentType
	}
	return list, err
}

// File is the workspace's file idOrUUID, with its content and the list of its versions.
func (s *Service) File(ctx context.Context, w Workspace, idOrUUID string) (File, error) {
	if strings.TrimSpace(idOrUUID) == "" {
		return File{}, apperr.Invalidf("file_uuid", "is required")
	}
	f, err := s.repo.File(ctx, w.ProjectID, w.ID, strings.TrimSpace(idOrUUID))
	f.ContentType = TypeOf(f.Path).ContentType
	if f.Versions == nil {
		f.Versions = []Version{}
	}
	return f, err
}

// FileAt is the workspace's file at path p (in any of its spellings: CleanPath).
func (s *Service) FileAt(ctx context.Context, w Workspace, p string) (File, error) {
	clean, err := CleanPath("file_path", p)
	if err != nil {
		return File{}, err
	}
	f, err := s.repo.FileAt(ctx, w.ProjectID, w.ID, clean)
	f.ContentType = TypeOf(f.Path).ContentType
	return f, err
}

// FileVersion is the workspace's file idOrUUID as it was at version (its current state when
// version is its current one).
func (s *Service) FileVersion(ctx context.Context, w Workspace, idOrUUID string, version int) (File, error) {
	f, err := s.File(ctx, w, idOrUUID)
	if err != nil || version == f.Version {
		return f, err
	}
	v, err := versionOf(f, version)
	if err != nil {
		return File{}, err
	}
	f.Path, f.Language, f.Encoding, f.Size, f.Content, f.Version, f.UpdatedAt = v.Path, v.Language, v.Encoding, v.Size, v.Content, v.Version, v.CreatedAt
	f.ContentType = TypeOf(f.Path).ContentType
	return f, nil
}

func versionOf(f File, version int) (Version, error) {
	for _, v := range f.Versions {
		if v.Version == version {
			return v, nil
		}
	}
	return Version{}, apperr.New(apperr.NotFound, "workspace_file_version_not_found",
		"The file has no version "+itoa(version)+": its versions are listed in its versions (the last "+itoa(MaxVersions)+" are kept).")
}

// FileInput is a file's creation or change: fields absent keep their value.
type FileInput struct {
	Path     *string
	Content  *string
	Language *string
}

// CreateFile adds a file at in.Path (a file already there is a Conflict), made by by.
func (s *Service) CreateFile(ctx context.Context, w Workspace, in FileInput, by Author) (File, error) {
	if in.Path == nil {
		return File{}, apperr.Invalidf("file_path", "is required")
	}
	p, err := CleanPath("file_path", *in.Path)
	if err != nil {
		return File{}, err
	}
	content := ""
	if in.Content != nil {
		content = *in.Content
	}
	size, enc, err := checked(p, content)
	if err != nil {
		return File{}, err
	}
	lang, err := language(p, in.Language, "")
	if err != nil {
		return File{}, err
	}
	if err := s.grow(ctx, w, 1, int64(size)); err != nil {
		return File{}, err
	}
	now := s.now()
	f := File{FileInfo: FileInfo{ID: ids.ObjectID(), UUID: ids.New(), ProjectID: w.ProjectID, WorkspaceID: w.ID, Path: p, Language: lang,
		Encoding: enc, Size: size, Version: 1, Author: by, CreatedAt: now, UpdatedAt: now}, Content: content, Versions: []Version{}, Rev: 1}
	if err := s.repo.InsertFile(ctx, f); err != nil {
		return File{}, s.giveBack(ctx, w, 1, int64(size), fileErr(err, p))
	}
	f.ContentType = TypeOf(p).ContentType
	return f, nil
}

// UpdateFile changes the content or the language of the file idOrUUID, by by.
func (s *Service) UpdateFile(ctx context.Context, w Workspace, idOrUUID string, in FileInput, by Author) (File, error) {
	return s.change(ctx, w, idOrUUID, by, func(f *File) error {
		if in.Content != nil {
			f.Content = *in.Content
		}
		lang, err := language(f.Path, in.Language, f.Language)
		f.Language = lang
		return err
	})
}

// RenameFile moves the file at oldPath to newPath (a file already there is a Conflict), by by.
func (s *Service) RenameFile(ctx context.Context, w Workspace, oldPath, newPath string, by Author) (File, error) {
	from, err := CleanPath("old_path", oldPath)
	if err != nil {
		return File{}, err
	}
	to, err := CleanPath("new_path", newPath)
	if err != nil {
		return File{}, err
	}
	f, err := s.repo.FileAt(ctx, w.ProjectID, w.ID, from)
	if err != nil {
		return File{}, err
	}
	if TypeOf(from).Binary() != TypeOf(to).Binary() {
		return File{}, apperr.Invalidf("new_path", "must keep the file a text file or a binary one (%s to %s)", TypeOf(from).ContentType, TypeOf(to).ContentType)
	}
	return s.change(ctx, w, f.ID, by, func(f *File) error {
		if f.Path != from {
			return apperr.NotFoundf(FileResource)
		}
		f.Path = to
		return nil
	})
}

// Restore makes the file idOrUUID what it was at version: a change like any other (its state
// before it is kept as a version in turn, so a restore is undone by restoring again), by by.
func (s *Service) Restore(ctx context.Context, w Workspace, idOrUUID string, version int, by Author) (File, error) {
	return s.change(ctx, w, idOrUUID, by, func(f *File) error {
		v, err := versionOf(*f, version)
		if err != nil {
			return err
		}
		f.Path, f.Language, f.Content = v.Path, v.Language, v.Content
		return nil
	})
}

// DeleteFile moves the file idOrUUID, its versions included, to the workspace's trash, deleted
// by by: its path is free at once and its bytes leave the quota, and Undelete brings it back.
func (s *Service) DeleteFile(ctx context.Context, w Workspace, idOrUUID string, by Author) error {
	f, err := s.File(ctx, w, idOrUUID)
	if err != nil {
		return err
	}
	size, err := apperr.Reapply(ctx, &s.writes, FileResource, f.ID, func() (int, error) {
		cur, err := s.File(ctx, w, f.ID)
		if err != nil {
			return 0, err
		}
		return cur.Size, s.repo.TrashFile(ctx, Deleted{File: cur, Deletion: Deletion{DeletedAt: s.now(), DeletedBy: by.By, DeletedRunID: by.RunID}})
	})
	if err != nil {
		return err
	}
	if _, err = s.repo.Grow(ctx, w.ProjectID, w.ID, -1, -int64(size), MaxFiles, MaxBytes); err != nil {
		return err
	}
	return s.repo.PruneTrash(ctx, w.ProjectID, w.ID, MaxTrash)
}

// Trash is a page of the workspace's deleted files, the last deleted first, without their
// contents.
func (s *Service) Trash(ctx context.Context, w Workspace, page paging.Page) ([]DeletedInfo, int, error) {
	list, total, err := s.repo.Trash(ctx, w.ProjectID, w.ID, page)
	for i := range list {
		list[i].ContentType = TypeOf(list[i].Path).ContentType
	}
	return list, total, err
}

// Undelete brings the deleted file idOrUUID back from the workspace's trash at its path, as it
// was when deleted (its versions included): a file now at that path is a Conflict, and the file
// must fit the workspace's quota again.
func (s *Service) Undelete(ctx context.Context, w Workspace, idOrUUID string) (File, error) {
	if strings.TrimSpace(idOrUUID) == "" {
		return File{}, apperr.Invalidf("file_uuid", "is required")
	}
	d, err := s.repo.Trashed(ctx, w.ProjectID, w.ID, strings.TrimSpace(idOrUUID))
	if err != nil {
		return File{}, err
	}
	f := d.File
	if err := s.grow(ctx, w, 1, int64(f.Size)); err != nil {
		return File{}, err
	}
	if err := s.repo.InsertFile(ctx, f); err != nil {
		if e := apperr.As(err); e.Kind == apperr.Conflict {
			err = apperr.New(apperr.Conflict, "workspace_file_exists",
				"The workspace has a file at "+f.Path+" already: rename or delete it, then restore this one.")
		}
		return File{}, s.giveBack(ctx, w, 1, int64(f.Size), err)
	}
	if err := s.repo.DropTrashed(ctx, w.ProjectID, w.ID, f.ID); err != nil {
		return File{}, err
	}
	f.ContentType = TypeOf(f.Path).ContentType
	if f.Versions == nil {
		f.Versions = []Version{}
	}
	return f, nil
}

// Download writes the workspace's files to out as a zip, one file at a time, each under its
// path (never absolute, never with ..: CleanPath).
func (s *Service) Download(ctx context.Context, w Workspace, out io.Writer) error {
	z := zip.NewWriter(out)
	err := s.repo.EachFile(ctx, w.ProjectID, w.ID, func(f File) error {
		dst, err := z.CreateHeader(&zip.FileHeader{Name: f.Path, Method: zip.Deflate, Modified: f.UpdatedAt})
		if err != nil {
			return err
		}
		return f.WriteContent(dst)
	})
	if err != nil {
		return err
	}
	return z.Close()
}

// change applies edit to the file idOrUUID and writes it as its next version, by by, keeping its
// state before as a version; an edit that changes nothing writes nothing.
func (s *Service) change(ctx context.Context, w Workspace, idOrUUID string, by Author, edit func(*File) error) (File, error) {
	f, err := s.File(ctx, w, idOrUUID)
	if err != nil {
		return File{}, err
	}
	return apperr.Reapply(ctx, &s.writes, FileResource, f.ID, func() (File, error) {
		old, err := s.File(ctx, w, f.ID)
		if err != nil {
			return File{}, err
		}
		next := old
		if err := edit(&next); err != nil {
			return File{}, err
		}
		if next.Path == old.Path && next.Content == old.Content && next.Language == old.Language {
			return old, nil
		}
		size, enc, err := checked(next.Path, next.Content)
		if err != nil {
			return File{}, err
		}
		next.Size, next.Encoding = size, enc
		next.Versions = kept(append([]Version{old.version()}, old.Versions...))
		next.Version, next.Rev, next.UpdatedAt, next.Author = old.Version+1, old.Rev+1, s.now(), by
		grown := int64(next.Size - old.Size)
		if grown > 0 {
			if err := s.grow(ctx, w, 0, grown); err != nil {
				return File{}, err
			}
		}
		if err := s.repo.ReplaceFile(ctx, next); err != nil {
			return File{}, s.giveBack(ctx, w, 0, max(grown, 0), fileErr(err, next.Path))
		}
		if grown < 0 {
			if _, err := s.repo.Grow(ctx, w.ProjectID, w.ID, 0, grown, MaxFiles, MaxBytes); err != nil {
				return File{}, err
			}
		}
		next.ContentType = TypeOf(next.Path).ContentType
		return next, nil
	})
}

// version is the file's current state as a version.
func (f File) version() Version {
	return Version{Version: f.Version, Path: f.Path, Language: f.Language, Encoding: f.Encoding, Size: f.Size, Content: f.Content, Author: f.Author, CreatedAt: f.UpdatedAt}
}

// kept is the versions, newest first, within MaxVersions and MaxVersionBytes of content.
func kept(vs []Version) []Version {
	n := 0
	for i, v := range vs {
		n += len(v.Content)
		if i == MaxVersions || n > MaxVersionBytes {
			return vs[:i]
		}
	}
	return vs
}

// grow reserves files and bytes of the workspace's quota.
func (s *Service) grow(ctx context.Context, w Workspace, files int, bytes int64) error {
	ok, err := s.repo.Grow(ctx, w.ProjectID, w.ID, files, bytes, MaxFiles, MaxBytes)
	switch {
	case err != nil:
		return err
	case ok:
		return nil
	case files > 0:
		// The files or the bytes: read which.
		cur, err := s.repo.Get(ctx, w.ProjectID, w.BotID, w.ID)
		if err != nil {
			return err
		}
		if cur.Files+files > MaxFiles {
			return apperr.New(apperr.Conflict, "workspace_file_limit",
				"The workspace has "+itoa(cur.Files)+" files, the most it can hold is "+itoa(MaxFiles)+": delete some first.")
		}
	}
	return apperr.New(apperr.TooLarge, "workspace_full",
		"The workspace's files would take more than "+itoa(MaxBytes)+" bytes, the most it can hold: delete or shrink some first.")
}

// giveBack returns a reservation of a write that failed with err, and err.
func (s *Service) giveBack(ctx context.Context, w Workspace, files int, bytes int64, err error) error {
	if files == 0 && bytes == 0 {
		return err
	}
	if _, gerr := s.repo.Grow(context.WithoutCancel(ctx), w.ProjectID, w.ID, -files, -bytes, MaxFiles, MaxBytes); gerr != nil {
		return gerr
	}
	return err
}

// checked is checks of content for the file at p, and its size over MaxFileBytes.
func checked(p, content string) (int, string, error) {
	if len(content) > 2*MaxFileBytes {
		return 0, "", apperr.New(apperr.TooLarge, "workspace_file_too_large", "A file of a workspace is at most "+itoa(MaxFileBytes)+" bytes.")
	}
	size, enc, err := decoded(p, content)
	if err == nil && size > MaxFileBytes {
		err = apperr.New(apperr.TooLarge, "workspace_file_too_large", "A file of a workspace is at most "+itoa(MaxFileBytes)+" bytes, not "+itoa(size)+".")
	}
	return size, enc, err
}

// language is the file's language: the one given, else the one it had, else its type's.
func language(p string, given *string, had string) (string, error) {
	if given != nil && strings.TrimSpace(*given) != "" {
		l := strings.ToLower(strings.TrimSpace(*given))
		if len(l) > MaxLanguageBytes {
			return "", apperr.Invalidf("language", "must be at most %d bytes", MaxLanguageBytes)
		}
		return l, nil
	}
	if had != "" {
		return had, nil
	}
	return TypeOf(p).Language, nil
}

// fileErr names the path of a write refused because another file has it.
func fileErr(err error, p string) error {
	if e := apperr.As(err); e.Kind == apperr.Conflict && e.Code == FileResource+"_exists" {
		return apperr.New(apperr.Conflict, "workspace_file_exists", "The workspace has a file at "+p+" already.")
	}
	return err
}

// WriteContent writes the file's bytes (base64 decoded) to out.
func (f File) WriteContent(out io.Writer) error {
	if f.Encoding != EncodingBase64 {
		_, err := io.WriteString(out, f.Content)
		return err
	}
	_, err := io.Copy(out, base64.NewDecoder(base64.StdEncoding, strings.NewReader(f.Content)))
	return err
}

func itoa(n int) string { return strconv.Itoa(n) }
