"""Expert kernel for 2p_gqa_attention on TPU: Tokamax's Mosaic TPU flash attention.

Tokamax (openxla's Pallas kernel library, the optional ``jaxbench[tokamax]`` extra) runs its
splash-attention kernel with a causal mask, each group of H/KV query heads sharing one kv
head; the inputs are transposed to its (B, S, H, D) layout and back. Tokamax refuses CPU
devices, where the harness runs every Pallas kernel interpreted, so the op is subclassed to
accept them; the kernel itself is unchanged.
"""

from tokamax._src.ops.attention import pallas_mosaic_tpu as tk

TARGET = "tpu"


class _Attention(tk.PallasMosaicTpuFlashAttention):
    def supported_on(self, device):
        return device.platform == "cpu" or super().supported_on(device)


def kernel(q, k, v):
    s = q.shape[2]
    blk = min(512, s)
    cfg = tk.Config(block_q=blk, block_kv=blk, block_kv_compute=blk,
                    q_layout=tk.splash.QKVLayout.HEAD_DIM_MINOR,
                    k_layout=tk.splash.QKVLayout.HEAD_DIM_MINOR,
                    v_layout=tk.splash.QKVLayout.HEAD_DIM_MINOR,
                    use_experimental_scheduler=True)
    qt, kt, vt = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
    out = _Attention(config=cfg)(qt, kt, vt, is_causal=True)
    return out.transpose(0, 2, 1, 3)
