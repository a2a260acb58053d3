// The session options every runtime measurement uses: ONNX Runtime's defaults (its default
// graph optimization level, the CPU provider) with one thread, so that two cores measure one
// model at a time and a run is not split between a busy core and an idle one.
export const SESSION_OPTIONS = {
  executionProviders: ['cpu'],
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  logSeverityLevel: 3,
};

// Sizes of the symbolic input dims: one sample, as an app runs it (a 224x224 image, 128 tokens,
// one second of 16 kHz audio, 100 frames); others take 1.
export const DIMS = { batch: 1, seq: 128, sequence: 128, time: 100, samples: 16000 };
