//! The GGUF's own vocabulary and merges as a Hugging Face tokenizer: byte-level BPE with the
//! `smollm` pre-tokenizer (each digit alone, then GPT-2's split), which is what llama.cpp runs
//! for `tokenizer.ggml.pre = smollm` and what the model's `tokenizer.json` declares. Control
//! and user-defined tokens (`<|im_start|>`, …) are matched whole in the text.

use crate::error::LlmError;
use crate::weights::Vocab;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, Tokenizer};

/// GGUF token types that are matched whole: control (3) and user-defined (4).
const WHOLE: [i32; 2] = [3, 4];

/// Text to token ids and back.
pub struct Tok {
    inner: Tokenizer,
    add_bos: Option<u32>,
}

impl Tok {
    pub fn new(vocab: &Vocab) -> Result<Tok, LlmError> {
        if vocab.pre != "smollm" {
            return Err(LlmError::Unsupported {
                what: "the `smollm` pre-tokenizer".into(),
                found: format!("`tokenizer.ggml.pre` = {}", vocab.pre),
            });
        }
        let map: ahash::AHashMap<String, u32> =
            vocab.tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        if map.len() != vocab.tokens.len() {
            return Err(LlmError::Tokenizer("the vocabulary repeats a token".into()));
        }
        let merges = vocab
            .merges
            .iter()
            .map(|m| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_owned(), b.to_owned()))
                    .ok_or_else(|| LlmError::Tokenizer(format!("merge `{m}` is not two tokens")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let bpe =
            BPE::builder().vocab_and_merges(map, merges).build().map_err(|e| LlmError::Tokenizer(e.to_string()))?;
        let mut inner = Tokenizer::new(bpe);
        inner.with_pre_tokenizer(Some(Sequence::new(vec![
            Digits::new(true).into(),
            ByteLevel::new(false, true, true).into(),
        ])));
        inner.with_decoder(Some(ByteLevelDecoder::default()));
        let special: Vec<AddedToken> = vocab
            .tokens
            .iter()
            .zip(&vocab.token_types)
            .filter(|(_, t)| WHOLE.contains(t))
            .map(|(s, _)| AddedToken::from(s.clone(), true))
            .collect();
        inner.add_special_tokens(&special);
        Ok(Tok { inner, add_bos: vocab.add_bos.then_some(vocab.bos) })
    }

    /// The token ids of `text` (with the beginning-of-sequence token where the GGUF asks for it).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, LlmError> {
        let enc = self.inner.encode(text, false).map_err(|e| LlmError::Tokenizer(e.to_string()))?;
        Ok(self.add_bos.into_iter().chain(enc.get_ids().iter().copied()).collect())
    }

    /// The text of `ids` (special tokens kept).
    pub fn decode(&self, ids: &[u32]) -> Result<String, LlmError> {
        self.inner.decode(ids, false).map_err(|e| LlmError::Tokenizer(e.to_string()))
    }
}
