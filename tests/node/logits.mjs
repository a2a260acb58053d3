// A decoder's variants judged on their logits, as people judge a quantized LLM: a seeded prompt of
// token ids spread over the whole vocabulary (the oracle's ids are 0-9, a handful of embedding rows),
// and, against the original's logits, compareTensors' (onnxfold/accuracy) cosine, the share of
// positions whose top token (argmax over the vocabulary) is the same, and the largest |diff|
// relative to the original's range (relRange). No runtime: node tests, the Chromium test and
// bench/large/variants-llm.mjs share it.
import assert from 'node:assert/strict';
import { compareTensors, mulberry32 } from 'onnxfold/accuracy';

/** input_ids [batch, seq] as { type: 'int64', data: BigInt64Array, dims }: seeded, uniform over [0, vocab). */
export function promptIds({ seed, vocab, seq, batch = 1 }) {
  const rand = mulberry32(seed);
  const data = new BigInt64Array(batch * seq);
  for (let i = 0; i < data.length; i++) data[i] = BigInt(Math.floor(rand() * vocab));
  return { type: 'int64', data, dims: [batch, seq] };
}

/** Logits as compareTensors takes them: float32 `data` (the vocabulary last) of shape `dims`. */
export const logitsTensor = (data, dims) => ({ type: 'float32', data, dims });

// The 4-layer, hidden-768 decoder of issue 23 (make_llm.py), with Llama's vocabulary of 32,000:
// 77.5 M parameters, 310 MB of fp32 weights in external data.
export const DECODER_768 = {
  vocab: 32000,
  args: [
    '--layers',
    '4',
    '--hidden',
    '768',
    '--heads',
    '12',
    '--kv-heads',
    '12',
    '--ffn',
    '2048',
    '--vocab',
    '32000',
  ],
};
// The tests' prompt: 4 sequences of 32 token ids, so 128 positions are judged.
export const PROMPT = { seed: 7, batch: 4, seq: 32 };
// Bounds on the logits of DECODER_768's quantized variants on PROMPT against the original, in
// onnxruntime-node and -web: cosine, top-1 agreement and max |diff| / range. Measured 2026-11-26
// (node; PROMPT, and the worst of 12 prompts, seeds 1-12): int8 0.99949 / 0.99947, argmax 0.94 /
// 0.90, rel 0.018 / 0.018; q8 0.99858 / 0.99858, 0.93 / 0.81, 0.028 / 0.032; q4 and q4f16 0.9428 /
// 0.9386, 0.45 / 0.30, 0.17 / 0.19. The weights are random, so the logits of a position are close
// together and int4's top-1 flips often (chance is 1 in 32,000): the cosine is the sharp measure.
// Variants broken on purpose (PROMPT): a weight's scales reversed gives int8 0.99902 (q_proj of
// layer 0) and q4 0.920 (down_proj of layer 0) or 0.910 (lm_head); the 4-bit halves of a packed
// q4 weight swapped 0.897 (q_proj) and 0.874 (down_proj of layer 3); lm_head's largest and smallest
// scale swapped: int8 rel 0.28, q8 0.19. All fail these bounds. Not caught (too small to see in
// the logits): two scales of one q_proj swapped (every dtype), q_proj's scales reversed in q8
// (0.99830) and in q4 (0.941), two of lm_head's 768,000 q4 block scales swapped.
export const LOGIT_BOUNDS = {
  int8: { cosine: 0.9992, argmax: 0.85, rel: 0.03 },
  q8: { cosine: 0.998, argmax: 0.8, rel: 0.05 },
  q4: { cosine: 0.93, argmax: 0.25, rel: 0.25 },
  q4f16: { cosine: 0.93, argmax: 0.25, rel: 0.25 },
};

/**
 * The tests' judgement of DECODER_768's variants: `rows` maps each dtype to the compareTensors
 * of its logits with the original's; q4 and q4f16 are those variants' logits, as tensors (q4f16
 * must stay within 1e-2 of q4's range). fp16 within 1e-2 of the range, the quantized ones within
 * LOGIT_BOUNDS.
 */
export function assertVariantLogits(rows, q4, q4f16) {
  assert.ok(rows.fp16.relRange <= 1e-2, `fp16: logits off by ${rows.fp16.relRange} of their range`);
  const half = compareTensors('logits', q4, q4f16);
  assert.ok(half.relRange <= 1e-2, `q4f16: off by ${half.relRange} of q4's range`);
  for (const [dtype, { cosine, argmax, rel }] of Object.entries(LOGIT_BOUNDS)) {
    const r = rows[dtype];
    assert.ok(r.cosine >= cosine, `${dtype}: cosine ${r.cosine} < ${cosine}`);
    assert.ok(r.argmax >= argmax, `${dtype}: argmax agreement ${r.argmax} < ${argmax}`);
    assert.ok(r.relRange <= rel, `${dtype}: logits off by ${r.relRange} of their range (> ${rel})`);
  }
}
