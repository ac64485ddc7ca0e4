package receiver

import (
	"context"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
)

// The gRPC services hand each request to accept, as HTTP does; gRPC
// itself decodes, decompresses and enforces the size limit.

func (r *Receiver) registerGRPC(s *grpc.Server) {
	plogotlp.RegisterGRPCServer(s, &logsService{r: r})
	ptraceotlp.RegisterGRPCServer(s, &tracesService{r: r})
	pmetricotlp.RegisterGRPCServer(s, &metricsService{r: r})
}

// export is what the three services share (the token is checked before,
// in tap): a slot, accept, and the error a client retries on.
func (r *Receiver) export(ctx context.Context, name string, p payload) (int64, string, error) {
	if !r.slot() {
		r.Stats.Refused.Add(1)
		return 0, "", grpcError(ErrBusy)
	}
	defer r.release()
	rejected, why, err := r.accept(signalNamed(name), p)
	if err != nil {
		r.Stats.Refused.Add(1)
		r.cfg.Logf("refused a %s request over gRPC: %v", name, err)
		return 0, "", grpcError(err)
	}
	return rejected, why, nil
}

type logsService struct {
	plogotlp.UnimplementedGRPCServer
	r *Receiver
}

func (s *logsService) Export(ctx context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	rejected, why, err := s.r.export(ctx, "logs", logsPayload{req})
	resp := plogotlp.NewExportResponse()
	if err == nil && rejected > 0 {
		resp.PartialSuccess().SetRejectedLogRecords(rejected)
		resp.PartialSuccess().SetErrorMessage(why)
	}
	return resp, err
}

type tracesService struct {
	ptraceotlp.UnimplementedGRPCServer
	r *Receiver
}

func (s *tracesService) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	rejected, why, err := s.r.export(ctx, "traces", tracesPayload{req})
	resp := ptraceotlp.NewExportResponse()
	if err == nil && rejected > 0 {
		resp.PartialSuccess().SetRejectedSpans(rejected)
		resp.PartialSuccess().SetErrorMessage(why)
	}
	return resp, err
}

type metricsService struct {
	pmetricotlp.UnimplementedGRPCServer
	r *Receiver
}

func (s *metricsService) Export(ctx context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	rejected, why, err := s.r.export(ctx, "metrics", metricsPayload{req})
	resp := pmetricotlp.NewExportResponse()
	if err == nil && rejected > 0 {
		resp.PartialSuccess().SetRejectedDataPoints(rejected)
		resp.PartialSuccess().SetErrorMessage(why)
	}
	return resp, err
}
