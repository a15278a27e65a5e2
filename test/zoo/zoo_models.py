#!/usr/bin/python3
"""The model zoo: architectures people train every day, at small sizes.

Each entry is what a user would export: a torchvision model or a common
hand-written module, built with seed 0, in training mode, with a dynamic
batch. Randomness that no two programs can share (dropout, stochastic
depth) is switched off (p = 0), so that dtc and PyTorch see the same
function. Sizes are small (32x32 images, 16-token sequences, a few
layers) so that the whole zoo runs on a laptop CPU; the architectures are
the real ones.

MODELS maps a name to a Spec; run_zoo.py exports, compiles, trains and
compares them, and Inputs/torch_reference.py (test/e2e) builds the PyTorch
side from the same Spec.
"""

import math
from typing import Callable, NamedTuple, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class Spec(NamedTuple):
    make_model: Callable[[], nn.Module]
    make_input: Callable[[], torch.Tensor]  # example input, batch size 2
    input_name: str = "input"
    opset: Optional[int] = None  # None: 14, torch 1.13's default
    family: str = ""
    # classify (10 classes) | tokens (next token) | mse (reconstruct) |
    # inside (the model takes the labels as a second input and returns its loss)
    task: str = "classify"
    fast: bool = False  # in the CI subset
    float64: bool = False  # compare gradients with a float64 reference


def tv():
    import torchvision

    return torchvision.models


def deterministic(model):
    """Dropout and stochastic depth off: p = 0 everywhere."""
    for m in model.modules():
        if isinstance(m, nn.Dropout) or type(m).__name__ == "StochasticDepth":
            m.p = 0.0
    return model


def image(size=32, channels=3):
    return lambda: torch.randn(2, channels, size, size)


def tokens(vocab=96, seq=16):
    return lambda: torch.randint(0, vocab, (2, seq))


# --------------------------------------------------------------------------
# Hand-written modules
# --------------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention: a causal mask registered as a buffer, applied
    with masked_fill(bias == 0, -inf)."""

    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPT2Block(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, seq)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    """GPT-2 as nanoGPT writes it: learned positions, pre-norm blocks, the
    output layer tied to the token embedding."""

    def __init__(self, vocab=96, seq=16, d=32, heads=2, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.h = nn.ModuleList([GPT2Block(d, heads, seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, idx):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class BertEncoder(nn.Module):
    """A BERT-style encoder: token + position embeddings, post-norm
    nn.TransformerEncoder layers (GELU), a per-token output layer."""

    def __init__(self, vocab=96, seq=16, d=32, heads=2, layers=2, pad_id=None):
        super().__init__()
        self.pad_id = pad_id
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.norm = nn.LayerNorm(d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.norm(self.tok(idx) + self.pos(pos))
        # Padding tokens are masked out of attention: a mask computed at run
        # time from the input (idx == pad_id).
        mask = None if self.pad_id is None else idx == self.pad_id
        return self.head(self.encoder(x, src_key_padding_mask=mask))


class MixerBlock(nn.Module):
    def __init__(self, patches, d):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.token_mlp = nn.Sequential(nn.Linear(patches, 2 * patches), nn.GELU(),
                                       nn.Linear(2 * patches, patches))
        self.norm2 = nn.LayerNorm(d)
        self.channel_mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):  # [N, P, d]
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class MLPMixer(nn.Module):
    def __init__(self, image=32, patch=8, d=32, depth=2, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, d, patch, stride=patch)
        patches = (image // patch) ** 2
        self.blocks = nn.Sequential(*[MixerBlock(patches, d) for _ in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(dim=1))


class UNet(nn.Module):
    """A two-level U-Net: conv blocks, max-pool down, upsampling (nearest and
    a transposed convolution), skip connections by concatenation; per-pixel
    classes."""

    def __init__(self, channels=8, classes=10):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                                 nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())

        c = channels
        self.down1, self.down2, self.mid = block(3, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.dec2 = block(4 * c, 2 * c)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec1 = block(3 * c, c)
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        m = self.mid(F.max_pool2d(d2, 2))
        u2 = self.dec2(torch.cat([self.up2(m), d2], dim=1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], dim=1))
        return self.head(u1).mean(dim=(2, 3))  # image-level classes


class ConvAutoencoder(nn.Module):
    """Strided convolutions down, transposed convolutions up; trained to
    reconstruct its input (MSE)."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                     nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
            nn.ConvTranspose2d(8, 3, 3, stride=2, padding=1, output_padding=1))

    def forward(self, x):
        return self.decoder(self.encoder(x))


class AudioCNN(nn.Module):
    """A 1-D CNN over a waveform (M5-style): strided Conv1d, BatchNorm1d,
    max pooling, global average pooling."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(1, 16, 80, stride=16), nn.BatchNorm1d(16), nn.ReLU(), nn.MaxPool1d(4),
            nn.Conv1d(16, 32, 3, padding=1), nn.BatchNorm1d(32), nn.ReLU(), nn.MaxPool1d(4),
            nn.AdaptiveAvgPool1d(1))
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


class RecurrentClassifier(nn.Module):
    """Embedding -> a 2-layer (bidirectional for LSTM) recurrent net ->
    the last step's output -> classes."""

    def __init__(self, kind, vocab=96, d=16, hidden=24, classes=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        bidirectional = kind == "lstm"
        self.rnn = getattr(nn, kind.upper())(d, hidden, num_layers=2, bidirectional=bidirectional)
        self.fc = nn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, idx):
        out, _ = self.rnn(self.embed(idx).transpose(0, 1))  # sequence-first
        return self.fc(out[-1])


class LeNet5Avg(nn.Module):
    """LeNet-5 as published: average pooling (which torch 1.13 exports with
    an all-zero Pad in front), tanh."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 6, 5), nn.Tanh(), nn.AvgPool2d(2),
                                      nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2))
        self.classifier = nn.Sequential(nn.Linear(16 * 5 * 5, 120), nn.Tanh(),
                                        nn.Linear(120, 84), nn.Tanh(), nn.Linear(84, 10))

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


class LabelSmoothingCNN(nn.Module):
    """A model exported with its loss inside: forward(x, labels) returns
    cross-entropy with label smoothing 0.1 written out (torch 1.13 cannot
    export F.cross_entropy's label_smoothing) plus a small penalty on the
    logits, as users write multi-term losses."""

    def __init__(self, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                 nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, classes))

    def forward(self, x, labels):
        logits = self.net(x)
        smoothing = 0.1
        loss = (1 - smoothing) * F.cross_entropy(logits, labels) \
            - smoothing * F.log_softmax(logits, dim=1).mean()
        return loss + 1e-3 * (logits ** 2).mean()


def vgg11_small():
    m = tv().vgg11_bn(num_classes=10)
    m.avgpool = nn.AdaptiveAvgPool2d(1)
    m.classifier = nn.Sequential(nn.Linear(512, 128), nn.ReLU(), nn.Linear(128, 10))
    return m


def alexnet_small():
    """AlexNet's features; pooled to 1x1 (its 6x6 adaptive pool cannot be
    exported from a small image) and a narrower classifier."""
    m = tv().alexnet(num_classes=10)
    m.avgpool = nn.AdaptiveAvgPool2d(1)
    m.classifier = nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    return m


def vit_tiny():
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                             hidden_dim=32, mlp_dim=64, num_classes=10)


def swin_tiny():
    from torchvision.models.swin_transformer import SwinTransformer

    return SwinTransformer(patch_size=[2, 2], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                           window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10)


def classifier(make, **kwargs):
    return lambda: deterministic(make(num_classes=10, **kwargs))


MODELS = {
    # torchvision classification models, every family.
    "resnet18": Spec(classifier(lambda **k: tv().resnet18(**k)), image(), family="ResNet", fast=True),
    "resnet50": Spec(classifier(lambda **k: tv().resnet50(**k)), image(), family="ResNet"),
    "resnext50_32x4d": Spec(classifier(lambda **k: tv().resnext50_32x4d(**k)), image(), family="ResNeXt"),
    "wide_resnet50_2": Spec(classifier(lambda **k: tv().wide_resnet50_2(**k)), image(), family="ResNet"),
    "densenet121": Spec(classifier(lambda **k: tv().densenet121(**k)), image(), family="DenseNet"),
    "mobilenet_v2": Spec(classifier(lambda **k: tv().mobilenet_v2(**k)), image(), family="MobileNet",
                         fast=True),
    "mobilenet_v3_small": Spec(classifier(lambda **k: tv().mobilenet_v3_small(**k)), image(),
                               family="MobileNet"),
    "mobilenet_v3_large": Spec(classifier(lambda **k: tv().mobilenet_v3_large(**k)), image(),
                               family="MobileNet"),
    "efficientnet_b0": Spec(classifier(lambda **k: tv().efficientnet_b0(**k)), image(),
                            family="EfficientNet"),
    "shufflenet_v2_x0_5": Spec(classifier(lambda **k: tv().shufflenet_v2_x0_5(**k)), image(),
                               family="ShuffleNet"),
    "squeezenet1_1": Spec(classifier(lambda **k: tv().squeezenet1_1(**k)), image(64),
                          family="SqueezeNet"),
    "mnasnet0_5": Spec(classifier(lambda **k: tv().mnasnet0_5(**k)), image(), family="MNASNet"),
    "regnet_x_400mf": Spec(classifier(lambda **k: tv().regnet_x_400mf(**k)), image(), family="RegNet"),
    "regnet_y_400mf": Spec(classifier(lambda **k: tv().regnet_y_400mf(**k)), image(), family="RegNet"),
    "convnext_tiny": Spec(classifier(lambda **k: tv().convnext_tiny(stochastic_depth_prob=0.0, **k)),
                          image(), family="ConvNeXt"),
    "vgg11_bn": Spec(lambda: deterministic(vgg11_small()), image(), family="VGG"),
    "googlenet": Spec(classifier(lambda **k: tv().googlenet(aux_logits=False, init_weights=True,
                                                            transform_input=False, **k)),
                      image(), family="GoogLeNet"),
    "alexnet": Spec(lambda: deterministic(alexnet_small()), image(64), family="AlexNet"),
    "vit_tiny": Spec(lambda: deterministic(vit_tiny()), image(), family="ViT"),
    "swin_tiny": Spec(lambda: deterministic(swin_tiny()), image(), family="Swin"),
    # Hand-written modules.
    "lenet5_avgpool": Spec(LeNet5Avg, image(), family="LeNet"),
    "nanogpt": Spec(NanoGPT, tokens(), "tokens", opset=17, family="GPT-2", task="tokens", fast=True),
    "bert_encoder": Spec(BertEncoder, tokens(), "tokens", opset=17, family="BERT", task="tokens"),
    "bert_padding_mask": Spec(lambda: BertEncoder(pad_id=0), tokens(vocab=8), "tokens", opset=17,
                              family="BERT", task="tokens", fast=True),
    "mlp_mixer": Spec(MLPMixer, image(), opset=17, family="MLP-Mixer", fast=True),
    "unet": Spec(UNet, image(), opset=13, family="U-Net"),
    "conv_autoencoder": Spec(ConvAutoencoder, image(), family="autoencoder", task="mse"),
    "audio_cnn1d": Spec(AudioCNN, lambda: torch.randn(2, 1, 4000), family="audio CNN"),
    "lstm_classifier": Spec(lambda: RecurrentClassifier("lstm"), tokens(), "tokens",
                            family="LSTM"),
    "gru_classifier": Spec(lambda: RecurrentClassifier("gru"), tokens(), "tokens", family="GRU"),
    "loss_inside": Spec(LabelSmoothingCNN, image(), family="loss inside the model", task="inside",
                        fast=True),
}
