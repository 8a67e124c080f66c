package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// ExportResult says what Export wrote.
type ExportResult struct {
	RevisionID string
	// Files are the paths written, relative to the export directory.
	Files []string
}

// Export writes the workspace's lock and its cookbooks to out in the
// policy server layout, so that a static web server or object store
// serving out can be a policy server:
//
//	policies/NAME/revisions/REVISION_ID      the lock
//	policy_groups/GROUP/policies/NAME        the lock (when group is set)
//	NAME.lock.json                           the lock (for path and remote includes)
//	cookbook_artifacts/NAME/IDENTIFIER       a cookbook's manifest
//	file_store/SHA256                        a cookbook file's bytes
//
// The exported lock's cookbook sources are rewritten to their artifacts;
// its revision id does not change (sources are not part of it). The lock
// must not be stale.
func (w *Workspace) Export(ctx context.Context, out, group string) (*ExportResult, error) {
	l, _, err := ReadLock(w.LockPath())
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("there is no %s in %s; run toque install first", LockFileName, w.Dir)
		}
		return nil, err
	}
	w.trustIncludes(l)
	if ch := w.StaleInputs(l); len(ch) > 0 {
		return nil, fmt.Errorf("the lock is stale (%s); run toque install first", ch[0])
	}
	if group != "" && !nameRe.MatchString(group) {
		return nil, fmt.Errorf("%q is not a policy group name: use letters, digits, '_', '-' and '.'", group)
	}
	res := &ExportResult{RevisionID: l.RevisionID}
	write := func(rel string, b []byte) error {
		p := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := WriteFileAtomic(p, b, 0o644); err != nil {
			return err
		}
		res.Files = append(res.Files, rel)
		return nil
	}
	exported := *l
	exported.Inputs = nil
	exported.InputsDigest = ""
	exported.CookbookLocks = map[string]*CookbookLock{}
	for _, n := range slices.Sorted(maps.Keys(l.CookbookLocks)) {
		cl := l.CookbookLocks[n]
		dir, err := w.store.cookbookDir(ctx, w.Dir, n, cl)
		if err != nil {
			return nil, fmt.Errorf("cookbook %s: %w", n, err)
		}
		files, err := cookbookFilesChecked(dir, cl.Identifier)
		if err != nil {
			return nil, fmt.Errorf("cookbook %s: %w", n, err)
		}
		for _, f := range files {
			if f.Link != "" {
				continue // the manifest holds the target
			}
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
			if err != nil {
				return nil, err
			}
			if err := write("file_store/"+f.Checksum, b); err != nil {
				return nil, err
			}
		}
		m := artifactManifest{Name: n, Version: cl.Version, Identifier: cl.Identifier, Files: files}
		mb, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return nil, err
		}
		art := "cookbook_artifacts/" + n + "/" + cl.Identifier
		if err := write(art, append(mb, '\n')); err != nil {
			return nil, err
		}
		c := *cl
		c.SourceOptions = SourceOptions{Artifact: art}
		c.Source = describeSource(c.SourceOptions)
		exported.CookbookLocks[n] = &c
	}
	lb, err := exported.Marshal()
	if err != nil {
		return nil, err
	}
	if err := write("policies/"+l.Name+"/revisions/"+l.RevisionID, lb); err != nil {
		return nil, err
	}
	if group != "" {
		if err := write("policy_groups/"+group+"/policies/"+l.Name, lb); err != nil {
			return nil, err
		}
	}
	if err := write(l.Name+".lock.json", lb); err != nil {
		return nil, err
	}
	return res, nil
}

func cookbookFilesChecked(dir, identifier string) ([]CookbookFile, error) {
	files, err := CookbookFiles(dir)
	if err != nil {
		return nil, err
	}
	if id := FilesIdentifier(files); id != identifier {
		return nil, fmt.Errorf("%s holds identifier %s, not the locked %s; run toque install", dir, short(id), short(identifier))
	}
	return files, nil
}
