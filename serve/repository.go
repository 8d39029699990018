package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// ModelFile is the name of a version's model in the repository:
// <repository>/<model>/<version>/model.onnx.
const ModelFile = "model.onnx"

// IndexEntry is one row of the repository index: a model, or one of its
// versions, with its state.
type IndexEntry struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	State   string `json:"state,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Index lists the models of the repository and those added with
// AddModel: one row per served version, and one row with no version for a
// model that has none (not loaded, or failed). With readyOnly only the
// ready versions are listed.
func (s *Server) Index(readyOnly bool) ([]IndexEntry, error) {
	var rows []IndexEntry
	known := map[string]bool{}
	s.mu.RLock()
	for name, m := range s.models {
		known[name] = true
		for _, n := range m.numbers() {
			rows = append(rows, IndexEntry{Name: name, Version: strconv.FormatInt(n, 10), State: StateReady})
		}
		if len(m.versions) == 0 && !readyOnly {
			rows = append(rows, IndexEntry{Name: name, State: m.state, Reason: m.reason})
		}
	}
	s.mu.RUnlock()
	if s.opts.Repository != "" && !readyOnly {
		names, err := s.repositoryModels()
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if !known[name] {
				rows = append(rows, IndexEntry{Name: name, State: StateUnavailable, Reason: "unloaded"})
			}
		}
	}
	slices.SortFunc(rows, func(a, b IndexEntry) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return rows, nil
}

// repositoryModels lists the model directories of the repository.
func (s *Server) repositoryModels() ([]string, error) {
	ents, err := os.ReadDir(s.opts.Repository)
	if err != nil {
		return nil, fmt.Errorf("serve: model repository: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Rescan brings the served models in line with the repository: new models
// are loaded, models whose config or files changed are reloaded (versions
// whose files did not change are kept as they are), models whose
// directory is gone are unloaded. Requests in flight on a replaced version
// finish on it.
func (s *Server) Rescan(ctx context.Context) error {
	if s.opts.Repository == "" {
		return errNoRepository
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	names, err := s.repositoryModels()
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := s.loadFromRepository(ctx, name, false); err != nil && ctx.Err() != nil {
			return err
		}
	}
	s.mu.RLock()
	var gone []string
	for name, m := range s.models {
		if m.static == nil && !slices.Contains(names, name) {
			gone = append(gone, name)
		}
	}
	s.mu.RUnlock()
	for _, name := range gone {
		s.log.Info("model removed from the repository", "model", name)
		s.swap(&model{name: name})
	}
	return nil
}

// LoadModel loads or reloads a model: from the repository, or a model
// added with AddModel again. Versions whose files did not change are kept.
func (s *Server) LoadModel(ctx context.Context, name string) error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	s.mu.RLock()
	m := s.models[name]
	s.mu.RUnlock()
	if m != nil && m.static != nil {
		return s.loadStatic(ctx, name, m.static)
	}
	if s.opts.Repository == "" {
		return errorf(codeNotFound, "unknown model %q (the server has no repository to load it from)", name)
	}
	return s.loadFromRepository(ctx, name, true)
}

// UnloadModel stops serving a model; its requests in flight finish first.
// A repository model is loaded again by LoadModel or by a rescan only when
// its files change.
func (s *Server) UnloadModel(name string) error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	s.mu.RLock()
	m := s.models[name]
	s.mu.RUnlock()
	if m == nil {
		return errorf(codeNotFound, "unknown model %q", name)
	}
	s.log.Info("model unloaded on request", "model", name)
	files := m.filesSig // what it failed on, when it serves nothing
	if len(m.versions) > 0 {
		files = m.sig()
	}
	s.swap(&model{name: name, versions: map[int64]*version{}, state: StateUnavailable, reason: "unloaded",
		static: m.static, unloaded: true, filesSig: files})
	return nil
}

// sig is what a model's served versions were loaded from.
func (m *model) sig() string {
	var parts []string
	for _, n := range m.numbers() {
		parts = append(parts, m.versions[n].sig)
	}
	return strings.Join(parts, ",")
}

// loadFromRepository (re)loads one repository model. Without force, a
// model whose files did not change (or that was unloaded on request and
// did not change since) is left alone.
func (s *Server) loadFromRepository(ctx context.Context, name string, force bool) error {
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." || name == "" {
		return errorf(codeInvalid, "model name %q is not a directory name", name)
	}
	dir := filepath.Join(s.opts.Repository, name)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return errorf(codeNotFound, "unknown model %q: no directory %s in the repository", name, dir)
	}
	fail := func(err error) error {
		s.setFailed(name, nil, "", err)
		return err
	}
	cfgSig, err := fileSig(filepath.Join(dir, ConfigFile))
	if err != nil {
		return fail(err)
	}
	s.mu.RLock()
	old := s.models[name]
	s.mu.RUnlock()
	if old != nil && !force && old.filesSig == "config "+cfgSig {
		return nil // its config failed before (and it may have been unloaded since): wait for a change
	}
	cfg, err := ReadModelConfig(filepath.Join(dir, ConfigFile))
	if err != nil {
		s.setFailed(name, nil, "config "+cfgSig, err)
		return err
	}
	numbers, err := chooseVersions(dir, cfg.VersionPolicy)
	if err != nil {
		return fail(err)
	}
	sigs := map[int64]string{}
	var want []string
	for _, n := range numbers {
		fs, err := fileSig(filepath.Join(dir, strconv.FormatInt(n, 10), ModelFile))
		if err != nil {
			return fail(err)
		}
		sigs[n] = cfgSig + "/" + strconv.FormatInt(n, 10) + ":" + fs
		want = append(want, sigs[n])
	}
	files := strings.Join(want, ",")
	if old != nil && !force {
		if old.unloaded && old.filesSig == files {
			return nil // unloaded on request: loaded again when its files change
		}
		if len(old.versions) > 0 && old.sig() == files {
			return nil
		}
		if old.filesSig == files {
			return nil // failed before on these very files: wait for a change
		}
	}
	s.setLoading(name, nil)
	next := &model{name: name, versions: map[int64]*version{}, state: StateReady}
	for _, n := range numbers {
		if old != nil && old.versions[n] != nil && old.versions[n].sig == sigs[n] {
			next.versions[n] = old.versions[n]
			continue
		}
		path := filepath.Join(dir, strconv.FormatInt(n, 10), ModelFile)
		m, err := s.core.ReadModel(path)
		if err == nil {
			var v *version
			if v, err = s.compile(ctx, name, n, sigs[n], m, cfg); err == nil {
				next.versions[n] = v
				continue
			}
		}
		for k, v := range next.versions { // compiled for next, not served yet
			if old == nil || old.versions[k] != v {
				_ = v.cm.Close()
			}
		}
		err = fmt.Errorf("serve: model %q version %d (%s): %w", name, n, path, err)
		s.setFailed(name, nil, files, err)
		return err
	}
	s.swap(next)
	return nil
}

// chooseVersions lists the version directories that hold a model file
// and picks those the policy serves (default: the newest).
func chooseVersions(dir string, p *VersionPolicy) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	var all []int64
	for _, e := range ents {
		n, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || n < 1 || !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), ModelFile)); err == nil {
			all = append(all, n)
		}
	}
	slices.Sort(all)
	if len(all) == 0 {
		return nil, fmt.Errorf("serve: model directory %s has no version: want %s/<version>/%s, version an integer >= 1", dir, dir, ModelFile)
	}
	switch {
	case p == nil:
		return all[len(all)-1:], nil
	case p.All:
		return all, nil
	case len(p.Specific) > 0:
		for _, n := range p.Specific {
			if !slices.Contains(all, n) {
				return nil, fmt.Errorf("serve: %s: version_policy.specific names version %d, which has no %s", dir, n, ModelFile)
			}
		}
		return slices.Sorted(slices.Values(p.Specific)), nil
	}
	k := max(p.Latest, 1)
	return all[max(len(all)-k, 0):], nil
}

// fileSig is a file's identity for change detection: its size and
// modification time (a missing file is "-"), so a poll reads no model.
func fileSig(path string) (string, error) {
	st, err := os.Stat(path)
	if os.IsNotExist(err) {
		return "-", nil
	}
	if err != nil {
		return "", fmt.Errorf("serve: %w", err)
	}
	return strconv.FormatInt(st.Size(), 10) + "@" + strconv.FormatInt(st.ModTime().UnixNano(), 36), nil
}

// moduleVersion is clinfer's module version as the binary records it.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/clinfer/clinfer" {
				return d.Version
			}
		}
		if bi.Main.Path == "github.com/clinfer/clinfer" && bi.Main.Version != "" {
			return bi.Main.Version
		}
	}
	return "devel"
}
