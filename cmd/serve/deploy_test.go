package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/clinfer/clinfer/internal/servetest"
)

// The deploy/ files are checked here, beside the flags they pass:
//
//   - Kubernetes objects are decoded strictly, as the API server does (an
//     unknown, duplicate or miscased field is an error) into the Kubernetes API's own Go types
//     (k8s.io/api v0.37.2), which is the schema kubectl validates against;
//   - KServe's ServingRuntime (serving.kserve.io/v1alpha1) and
//     InferenceService (v1beta1) strictly into the subset of KServe's API
//     types (github.com/kserve/kserve pkg/apis/serving, commit 0217bdab)
//     the files use, their containers and resources as k8s.io/api types;
//   - the Dockerfile by its instructions (no Dockerfile linter is packaged
//     in Debian or the Go module proxy);
//   - and every container's arguments are parsed by cmd/serve's flags and
//     run: the server starts with them (ports moved to loopback) and
//     answers the probes' paths.
//
// kubectl's --dry-run needs a cluster for discovery, and no cluster runs
// in CI, so there is no dry run.

// decodeStrict decodes one YAML document into v as the Kubernetes API
// server does (sigs.k8s.io/json: field names case-sensitive), refusing
// unknown, duplicate and miscased fields.
func decodeStrict(t *testing.T, doc []byte, v any) {
	t.Helper()
	j, err := yaml.YAMLToJSON(doc)
	require.NoError(t, err)
	strict, err := k8sjson.UnmarshalStrict(j, v)
	require.NoError(t, err)
	require.Empty(t, strict, "strict decoding errors")
}

func readDeploy(t *testing.T, name string) []byte {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	require.NoError(t, err)
	return b
}

// servingRuntime is the subset of KServe's v1alpha1 ServingRuntime that
// deploy/kserve uses, with KServe's JSON names.
type servingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		SupportedModelFormats []struct {
			Name       string `json:"name"`
			Version    string `json:"version,omitempty"`
			AutoSelect *bool  `json:"autoSelect,omitempty"`
			Priority   *int32 `json:"priority,omitempty"`
		} `json:"supportedModelFormats,omitempty"`
		MultiModel       *bool              `json:"multiModel,omitempty"`
		ProtocolVersions []string           `json:"protocolVersions,omitempty"`
		Containers       []corev1.Container `json:"containers"`
		Annotations      map[string]string  `json:"annotations,omitempty"`
	} `json:"spec"`
}

// inferenceService is the subset of KServe's v1beta1 InferenceService that
// deploy/kserve uses.
type inferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Predictor struct {
			MinReplicas *int32 `json:"minReplicas,omitempty"`
			MaxReplicas int32  `json:"maxReplicas,omitempty"`
			Model       *struct {
				ModelFormat struct {
					Name    string  `json:"name"`
					Version *string `json:"version,omitempty"`
				} `json:"modelFormat"`
				Runtime         *string                     `json:"runtime,omitempty"`
				ProtocolVersion string                      `json:"protocolVersion,omitempty"`
				StorageURI      *string                     `json:"storageUri,omitempty"`
				Resources       corev1.ResourceRequirements `json:"resources,omitempty"`
			} `json:"model,omitempty"`
		} `json:"predictor"`
	} `json:"spec"`
}

// TestDeployManifests validates deploy/ (see above).
func TestDeployManifests(t *testing.T) {
	var dep appsv1.Deployment
	decodeStrict(t, readDeploy(t, "kubernetes/deployment.yaml"), &dep)
	var svc corev1.Service
	decodeStrict(t, readDeploy(t, "kubernetes/service.yaml"), &svc)
	var hpa autoscalingv2.HorizontalPodAutoscaler
	decodeStrict(t, readDeploy(t, "kubernetes/hpa.yaml"), &hpa)
	var rt servingRuntime
	decodeStrict(t, readDeploy(t, "kserve/servingruntime.yaml"), &rt)
	var isvc inferenceService
	decodeStrict(t, readDeploy(t, "kserve/inferenceservice.yaml"), &isvc)

	t.Run("kubernetes", func(t *testing.T) {
		assert.Equal(t, "apps/v1", dep.APIVersion)
		assert.Equal(t, "Deployment", dep.Kind)
		require.NotNil(t, dep.Spec.Selector)
		for k, v := range dep.Spec.Selector.MatchLabels {
			assert.Equal(t, v, dep.Spec.Template.Labels[k], "the selector matches the pod template's labels")
			assert.Equal(t, v, svc.Spec.Selector[k], "the Service selects the Deployment's pods")
		}
		require.Len(t, dep.Spec.Template.Spec.Containers, 1)
		c := dep.Spec.Template.Spec.Containers[0]
		o := parseArgs(t, c.Args)
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		assert.Equal(t, ":"+fmt.Sprint(ports["http"]), o.httpAddr, "the http port is the one -http listens on")
		assert.Equal(t, ":"+fmt.Sprint(ports["grpc"]), o.grpcAddr, "the grpc port is the one -grpc listens on")
		for _, p := range svc.Spec.Ports {
			_, ok := ports[p.TargetPort.StrVal]
			assert.True(t, ok, "Service port %s targets a container port", p.Name)
		}
		require.NotNil(t, dep.Spec.Template.Spec.TerminationGracePeriodSeconds)
		assert.Greater(t, float64(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds), o.drain.Seconds(), "the grace period covers the drain")
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
			require.NotNil(t, p)
			require.NotNil(t, p.HTTPGet)
			assert.Equal(t, "http", p.HTTPGet.Port.StrVal)
		}
		assert.Equal(t, "Deployment", hpa.Spec.ScaleTargetRef.Kind)
		assert.Equal(t, dep.Name, hpa.Spec.ScaleTargetRef.Name)
		runArgs(t, c.Args, c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path, c.StartupProbe.HTTPGet.Path, dep.Spec.Template.Annotations["prometheus.io/path"])
	})

	t.Run("kserve", func(t *testing.T) {
		assert.Equal(t, "serving.kserve.io/v1alpha1", rt.APIVersion)
		assert.Equal(t, "ServingRuntime", rt.Kind)
		assert.Equal(t, "serving.kserve.io/v1beta1", isvc.APIVersion)
		assert.Equal(t, "InferenceService", isvc.Kind)
		require.Len(t, rt.Spec.Containers, 1)
		c := rt.Spec.Containers[0]
		assert.Equal(t, "kserve-container", c.Name, "KServe's name for the serving container")
		o := parseArgs(t, c.Args)
		assert.Equal(t, "/mnt/models", o.repository, "KServe's storage initializer downloads to /mnt/models")
		require.Len(t, c.Ports, 1)
		assert.Equal(t, ":"+fmt.Sprint(c.Ports[0].ContainerPort), o.httpAddr)
		assert.Equal(t, fmt.Sprint(c.Ports[0].ContainerPort), rt.Spec.Annotations["prometheus.kserve.io/port"])
		for _, v := range rt.Spec.ProtocolVersions {
			assert.Contains(t, []string{"v2", "grpc-v2"}, v, "the protocols cmd/serve speaks")
		}
		require.NotNil(t, isvc.Spec.Predictor.Model)
		m := isvc.Spec.Predictor.Model
		require.NotNil(t, m.Runtime)
		assert.Equal(t, rt.Name, *m.Runtime)
		assert.Equal(t, "onnx", m.ModelFormat.Name)
		assert.True(t, slices.ContainsFunc(rt.Spec.SupportedModelFormats, func(f struct {
			Name       string `json:"name"`
			Version    string `json:"version,omitempty"`
			AutoSelect *bool  `json:"autoSelect,omitempty"`
			Priority   *int32 `json:"priority,omitempty"`
		}) bool {
			return f.Name == m.ModelFormat.Name
		}), "the runtime supports the InferenceService's model format")
		assert.Contains(t, rt.Spec.ProtocolVersions, m.ProtocolVersion)
		runArgs(t, c.Args, c.ReadinessProbe.HTTPGet.Path, rt.Spec.Annotations["prometheus.kserve.io/path"])
	})

	t.Run("dockerfile", func(t *testing.T) {
		stages := dockerStages(t, readDeploy(t, "Dockerfile"))
		require.Len(t, stages, 2, "a build stage and a runtime stage")
		goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mustRead(t, "../../go.mod"))
		require.NotNil(t, goVersion)
		assert.Equal(t, "golang:"+string(goVersion[1])+"-bookworm AS build", stages[0].from, "the build image's Go is go.mod's, on Debian 12 like CI")
		assert.Contains(t, stages[0].all("RUN"), "go build -trimpath -o /out/serve ./cmd/serve")
		rt := stages[1]
		assert.Equal(t, "debian:bookworm-slim", rt.from)
		run := rt.all("RUN")
		for _, pkg := range []string{"ocl-icd-libopencl1", "pocl-opencl-icd"} {
			assert.Contains(t, run, pkg, "the runtime has the ICD loader and POCL")
		}
		assert.Contains(t, run, "echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd", "the NVIDIA ICD entry for the container toolkit's driver")
		env := rt.all("ENV")
		assert.Contains(t, env, "NVIDIA_VISIBLE_DEVICES=all")
		assert.Regexp(t, `NVIDIA_DRIVER_CAPABILITIES=[a-z,]*compute`, env)
		assert.Contains(t, rt.all("COPY"), "--from=build /out/serve /usr/local/bin/serve")
		var entry, cmd []string
		require.NoError(t, json.Unmarshal([]byte(rt.all("ENTRYPOINT")), &entry))
		require.NoError(t, json.Unmarshal([]byte(rt.all("CMD")), &cmd))
		assert.Equal(t, []string{"/usr/local/bin/serve"}, entry)
		o := parseArgs(t, cmd)
		assert.Equal(t, fmt.Sprintf("%s %s", strings.TrimPrefix(o.httpAddr, ":"), strings.TrimPrefix(o.grpcAddr, ":")), rt.all("EXPOSE"))
		assert.NotEqual(t, "", rt.all("USER"), "the server does not run as root")
		runArgs(t, cmd, "/v2/health/ready")
	})
}

// parseArgs parses a container's arguments with cmd/serve's flags.
func parseArgs(t *testing.T, args []string) *options {
	t.Helper()
	fs, o := newFlagSet(io.Discard)
	require.NoError(t, fs.Parse(args), "%q", args)
	require.Zero(t, fs.NArg(), "%q", args)
	return o
}

// runArgs runs the server with a container's arguments, its ports moved
// to loopback and its repository to a temporary one holding a model, and
// checks that it answers the given paths with 200.
func runArgs(t *testing.T, args []string, paths ...string) {
	t.Helper()
	repo := t.TempDir()
	servetest.WriteModel(t, repo, "affine", 1, servetest.Affine(2), `{"device": "CPU"}`)
	override := map[string]string{"repository": repo, "http": "127.0.0.1:0", "grpc": "127.0.0.1:0"}
	local := slices.Clone(args)
	for j := 0; j < len(local); j++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(local[j], "-"), "=")
		v, ok := override[name]
		switch {
		case !ok:
		case hasValue:
			local[j] = "-" + name + "=" + v
		case j+1 < len(local):
			local[j+1] = v
			j++
		}
	}
	h, _, _, stop := start(t, local...)
	defer func() { require.NoError(t, stop()) }()
	for _, p := range paths {
		resp, err := http.Get("http://" + h + p)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode, "%s with %q", p, args)
	}
	resp, err := http.Post("http://"+h+"/v2/models/affine/infer", "application/json",
		strings.NewReader(`{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "inference with %q", args)
}

// stage is one FROM ... stage of a Dockerfile: its base and instructions.
type stage struct {
	from  string
	instr [][2]string // keyword, arguments
}

// all joins the arguments of every instruction of a keyword.
func (s stage) all(kw string) string {
	var parts []string
	for _, in := range s.instr {
		if in[0] == kw {
			parts = append(parts, in[1])
		}
	}
	return strings.Join(parts, "\n")
}

// dockerStages splits a Dockerfile into stages, joining continued lines
// and refusing instructions Docker does not know.
func dockerStages(t *testing.T, src []byte) []stage {
	known := []string{"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
	var stages []stage
	var line string
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || (l == "" && line == "") {
			continue
		}
		if cont, ok := strings.CutSuffix(l, "\\"); ok {
			line += cont + " "
			continue
		}
		line += l
		kw, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		line = ""
		require.Contains(t, known, kw, "Dockerfile instruction")
		rest = strings.Join(strings.Fields(rest), " ")
		if kw == "FROM" {
			stages = append(stages, stage{from: rest})
			continue
		}
		require.NotEmpty(t, stages, "%s before FROM", kw)
		stages[len(stages)-1].instr = append(stages[len(stages)-1].instr, [2]string{kw, rest})
	}
	require.NoError(t, sc.Err())
	return stages
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
