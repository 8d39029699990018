package serve

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/clinfer/clinfer/serve/inferencepb"
	"github.com/clinfer/clinfer/tensor"
)

// grpcService implements GRPCInferenceService over the Server.
type grpcService struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer
	s *Server
}

// RegisterGRPC registers the protocol's GRPCInferenceService (with the
// repository extension) on g; make g with GRPCOptions so that the limits,
// the bearer token and the request IDs apply.
func (s *Server) RegisterGRPC(g *grpc.Server) {
	inferencepb.RegisterGRPCInferenceServiceServer(g, &grpcService{s: s})
}

// GRPCOptions are the options a grpc.Server for RegisterGRPC needs: the
// message size limit (checked from the length prefix before a message is
// read), a handshake timeout, keepalive and idle limits, a bound of 128
// concurrent streams per connection, and the interceptor that checks the
// bearer token, echoes x-request-id and counts grpc_server_handled_total.
func (s *Server) GRPCOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(min(s.opts.MaxRequestBytes, math.MaxInt32))),
		grpc.MaxSendMsgSize(math.MaxInt32),
		grpc.ConnectionTimeout(10 * time.Second),
		grpc.MaxConcurrentStreams(128),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 5 * time.Minute, Time: time.Minute, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(s.unaryInterceptor),
	}
}

// unaryInterceptor gives every call its request ID (x-request-id from the
// metadata, or a new one, sent back in the header), checks the bearer
// token on all but the health checks and counts the outcome.
func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	id := ""
	if v := md.Get("x-request-id"); len(v) > 0 && len(v[0]) <= 128 {
		id = v[0]
	}
	if id == "" {
		id = newRequestID()
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs("x-request-id", id))
	ctx = context.WithValue(ctx, requestIDKey{}, id)
	service, method := splitMethod(info.FullMethod)
	var resp any
	var err error
	auth := md.Get("authorization")
	if method != "ServerLive" && method != "ServerReady" && !s.authorized(strings.Join(auth, "")) {
		err = status.Error(codes.Unauthenticated, "missing or wrong bearer token (metadata authorization: Bearer TOKEN)")
	} else {
		resp, err = handler(ctx, req)
	}
	s.metrics.grpc.WithLabelValues(service, method, status.Code(err).String()).Inc()
	return resp, err
}

// splitMethod splits "/inference.GRPCInferenceService/ModelInfer".
func splitMethod(full string) (string, string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "unknown", full
}

// grpcError is err as a gRPC status.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	ae := classify(err)
	return status.Error(codeInfo[ae.code].grpc, ae.msg)
}

// ServerLive answers true while the process serves.
func (g *grpcService) ServerLive(context.Context, *inferencepb.ServerLiveRequest) (*inferencepb.ServerLiveResponse, error) {
	return &inferencepb.ServerLiveResponse{Live: true}, nil
}

// ServerReady answers Server.Ready.
func (g *grpcService) ServerReady(context.Context, *inferencepb.ServerReadyRequest) (*inferencepb.ServerReadyResponse, error) {
	return &inferencepb.ServerReadyResponse{Ready: g.s.Ready()}, nil
}

// ModelReady answers whether a model version is served; an unknown one
// is NOT_FOUND.
func (g *grpcService) ModelReady(_ context.Context, req *inferencepb.ModelReadyRequest) (*inferencepb.ModelReadyResponse, error) {
	v, err := g.s.acquire(req.Name, req.Version)
	if err != nil {
		if ae := classify(err); ae.code == codeUnavailable {
			return &inferencepb.ModelReadyResponse{Ready: false}, nil
		}
		return nil, grpcError(err)
	}
	v.release()
	return &inferencepb.ModelReadyResponse{Ready: true}, nil
}

// ServerMetadata names the server, its version and extensions.
func (g *grpcService) ServerMetadata(context.Context, *inferencepb.ServerMetadataRequest) (*inferencepb.ServerMetadataResponse, error) {
	md := g.s.serverMetadata()
	return &inferencepb.ServerMetadataResponse{Name: md.Name, Version: md.Version, Extensions: md.Extensions}, nil
}

// ModelMetadata describes a served version's inputs and outputs.
func (g *grpcService) ModelMetadata(_ context.Context, req *inferencepb.ModelMetadataRequest) (*inferencepb.ModelMetadataResponse, error) {
	md, err := g.s.modelMetadata(req.Name, req.Version)
	if err != nil {
		return nil, grpcError(err)
	}
	resp := &inferencepb.ModelMetadataResponse{Name: md.Name, Versions: md.Versions, Platform: md.Platform}
	for _, t := range md.Inputs {
		resp.Inputs = append(resp.Inputs, &inferencepb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
	}
	for _, t := range md.Outputs {
		resp.Outputs = append(resp.Outputs, &inferencepb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape})
	}
	return resp, nil
}

// ModelInfer runs one inference (see inferGRPC).
func (g *grpcService) ModelInfer(ctx context.Context, req *inferencepb.ModelInferRequest) (*inferencepb.ModelInferResponse, error) {
	start := time.Now()
	v, err := g.s.acquire(req.ModelName, req.ModelVersion)
	if err != nil {
		g.s.observe(ctx, "grpc", req.ModelName, req.ModelVersion, nil, start, timing{}, err)
		return nil, grpcError(err)
	}
	defer v.release()
	resp, tm, err := g.s.inferGRPC(ctx, v, req)
	g.s.observe(ctx, "grpc", req.ModelName, req.ModelVersion, v, start, tm, err)
	return resp, grpcError(err)
}

// inferGRPC decodes, runs and encodes one gRPC inference; outputs go in
// raw_output_contents, as Triton sends them.
func (s *Server) inferGRPC(ctx context.Context, v *version, req *inferencepb.ModelInferRequest) (*inferencepb.ModelInferResponse, timing, error) {
	raw := req.RawInputContents
	if len(raw) > 0 && len(raw) != len(req.Inputs) {
		return nil, timing{}, errorf(codeInvalid, "raw_input_contents has %d entries for %d inputs: give every input's data there, or none", len(raw), len(req.Inputs))
	}
	inputs := make(map[string]*tensor.Tensor, len(req.Inputs))
	for i, in := range req.Inputs {
		p, ok := v.input(in.Name)
		if !ok {
			return nil, timing{}, errorf(codeInvalid, "unknown input %q: model %q has inputs %s", in.Name, v.model, portNames(v.inputs))
		}
		if _, dup := inputs[in.Name]; dup {
			return nil, timing{}, errorf(codeInvalid, "input %q given twice", in.Name)
		}
		t, n, err := checkInput(p, in.Datatype, in.Shape, s.opts.MaxTensorBytes)
		if err != nil {
			return nil, timing{}, err
		}
		var x *tensor.Tensor
		if len(raw) > 0 {
			if int64(len(raw[i])) == n {
				x, err = tensor.WrapBytes(t, tensor.Shape(in.Shape), raw[i]) // the message's own bytes: no copy
			}
			if x == nil {
				x, err = fromRaw(in.Name, t, in.Shape, n, raw[i])
			}
		} else {
			x, err = fromContents(in.Name, t, in.Shape, in.Contents)
		}
		if err != nil {
			return nil, timing{}, err
		}
		inputs[in.Name] = x
	}
	for _, p := range v.inputs {
		if _, ok := inputs[p.Name]; !ok {
			return nil, timing{}, errorf(codeInvalid, "input %q (%s%v) missing: model %q has inputs %s", p.Name, datatypeName(p.Type), portShape(p), v.model, portNames(v.inputs))
		}
	}
	names := make([]string, 0, len(v.outputs))
	if len(req.Outputs) == 0 {
		for _, p := range v.outputs {
			names = append(names, p.Name)
		}
	}
	for _, o := range req.Outputs {
		if _, ok := v.output(o.Name); !ok {
			return nil, timing{}, errorf(codeInvalid, "unknown output %q: model %q has outputs %s", o.Name, v.model, portNames(v.outputs))
		}
		names = append(names, o.Name)
	}
	results, tm, err := v.infer(ctx, inputs)
	if err != nil {
		return nil, tm, err
	}
	resp := &inferencepb.ModelInferResponse{ModelName: v.model, ModelVersion: strconv.FormatInt(v.number, 10), Id: req.Id}
	for _, name := range names {
		x := results[name].Contiguous()
		resp.Outputs = append(resp.Outputs, &inferencepb.ModelInferResponse_InferOutputTensor{Name: name, Datatype: datatypeName(x.Type()), Shape: x.Shape().Clone()})
		resp.RawOutputContents = append(resp.RawOutputContents, x.Bytes())
	}
	return resp, tm, nil
}

// fromContents makes a tensor from typed InferTensorContents.
func fromContents(name string, t tensor.ElementType, shape []int64, c *inferencepb.InferTensorContents) (*tensor.Tensor, error) {
	if c == nil {
		return nil, errorf(codeInvalid, "input %q has neither contents nor raw_input_contents", name)
	}
	s := tensor.Shape(shape)
	switch t {
	case tensor.F32:
		return typedContents(name, s, c.Fp32Contents, tensor.FromF32)
	case tensor.F64:
		return typedContents(name, s, c.Fp64Contents, tensor.FromF64)
	case tensor.I64:
		return typedContents(name, s, c.Int64Contents, tensor.FromI64)
	case tensor.I32:
		return typedContents(name, s, c.IntContents, tensor.FromI32)
	case tensor.Bool:
		return typedContents(name, s, c.BoolContents, tensor.FromBool)
	case tensor.U8:
		v := make([]uint8, 0, min(len(c.UintContents), int(s.NumElements())))
		for i, u := range c.UintContents {
			if u > math.MaxUint8 {
				return nil, errorf(codeInvalid, "input %q: uint_contents[%d]=%d is not a UINT8", name, i, u)
			}
			v = append(v, uint8(u))
		}
		return typedContents(name, s, v, tensor.FromU8)
	}
	return nil, errorf(codeInvalid, "input %q: %s data goes in raw_input_contents (the protocol has no typed contents for it here)", name, datatypeName(t))
}

// typedContents makes a tensor of shape s from vals, which must hold
// exactly its elements.
func typedContents[T any](name string, s tensor.Shape, vals []T, ctor func(tensor.Shape, []T) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	if int64(len(vals)) != s.NumElements() {
		return nil, errorf(codeInvalid, "input %q: contents hold %d values, shape %v needs %d", name, len(vals), s, s.NumElements())
	}
	x, err := ctor(s, vals)
	if err != nil {
		return nil, errorf(codeInvalid, "input %q: %v", name, err)
	}
	return x, nil
}

// RepositoryIndex lists the repository's models and their states.
func (g *grpcService) RepositoryIndex(_ context.Context, req *inferencepb.RepositoryIndexRequest) (*inferencepb.RepositoryIndexResponse, error) {
	rows, err := g.s.Index(req.Ready)
	if err != nil {
		return nil, grpcError(err)
	}
	resp := &inferencepb.RepositoryIndexResponse{}
	for _, r := range rows {
		resp.Models = append(resp.Models, &inferencepb.RepositoryIndexResponse_ModelIndex{Name: r.Name, Version: r.Version, State: r.State, Reason: r.Reason})
	}
	return resp, nil
}

// RepositoryModelLoad loads or reloads a model.
func (g *grpcService) RepositoryModelLoad(ctx context.Context, req *inferencepb.RepositoryModelLoadRequest) (*inferencepb.RepositoryModelLoadResponse, error) {
	if err := g.s.LoadModel(ctx, req.ModelName); err != nil {
		if ae := classify(err); ae.code == codeInternal {
			err = errorf(codeInvalid, "%v", err)
		}
		return nil, grpcError(err)
	}
	return &inferencepb.RepositoryModelLoadResponse{}, nil
}

// RepositoryModelUnload stops serving a model.
func (g *grpcService) RepositoryModelUnload(_ context.Context, req *inferencepb.RepositoryModelUnloadRequest) (*inferencepb.RepositoryModelUnloadResponse, error) {
	if err := g.s.UnloadModel(req.ModelName); err != nil {
		return nil, grpcError(err)
	}
	return &inferencepb.RepositoryModelUnloadResponse{}, nil
}
