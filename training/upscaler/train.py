"""Trains the x2 (or x4, --scale 4) luma correction network that image_upscale and video_upscale add to a centred
Lanczos3 (docs/decisions.md, "A learned upscaler"). CPU only, Debian's python3-torch and
python3-onnx; see README.md beside this file for the command and what it writes."""
import argparse, io, json, math, os, random, sys, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

from lanczos import lanczos_up
from model import make_net


def luma(img):
    """BT.601 luma of an 8-bit RGB (or grey) PIL image, 0..1, full range (what the service uses)."""
    a = np.asarray(img.convert('RGB'), dtype=np.float32) / 255.0
    return a[..., 0] * 0.299 + a[..., 1] * 0.587 + a[..., 2] * 0.114


def load_truths(root, folders, scale):
    """Each training photo as luma truth. JPEG sources are reduced 2x by area first (their block
    artefacts would otherwise be learned as detail); sides trimmed to a multiple of the scale."""
    truths = []
    for folder in folders:
        d = os.path.join(root, folder)
        for name in sorted(os.listdir(d)):
            img = Image.open(os.path.join(d, name)).convert('RGB')
            if name.lower().endswith(('.jpg', '.jpeg')):
                img = img.reduce(2)
            w, h = img.size
            img = img.crop((0, 0, w - w % scale, h - h % scale))
            truths.append((folder + '/' + name, img))
    return truths


def reduce_by(img, how, scale):
    w, h = img.size
    if how == 'bicubic':
        return img.resize((w // scale, h // scale), Image.BICUBIC)
    if how == 'area':
        return img.reduce(scale)
    return img.resize((w // scale, h // scale), Image.LANCZOS)


REDUCTIONS = ('bicubic', 'area', 'lanczos')


def make_pairs(truths, scale, reductions=REDUCTIONS):
    """Every photo reduced each of the three ways (a way named twice is drawn twice as often): (lr rgb image, hr luma) pairs."""
    pairs = []
    for _, img in truths:
        hr = luma(img)
        for how in reductions:
            pairs.append((reduce_by(img, how, scale), hr))
    return pairs


def degrade(lr_rgb, rng, jpeg=True):
    """What real inputs carry on top of the reduction: JPEG artefacts, sensor noise, film grain
    (each sometimes). The truth stays clean, so the net learns not to sharpen them."""
    img = lr_rgb
    r = rng.random()
    arr = None
    if jpeg and r < 0.25:
        buf = io.BytesIO()
        img.save(buf, 'JPEG', quality=rng.randint(60, 95))
        img = Image.open(io.BytesIO(buf.getvalue())).convert('RGB')
    y = luma(img)
    r = rng.random()
    if r < 0.2:
        y = y + np.random.default_rng(rng.randint(0, 2**31)).normal(0, rng.uniform(1, 6) / 255.0, y.shape).astype(np.float32)
    elif r < 0.3:
        # grain: noise correlated over ~2 px, stronger in mid tones
        g = np.random.default_rng(rng.randint(0, 2**31)).normal(0, 1, y.shape).astype(np.float32)
        gt = torch.from_numpy(g)[None, None]
        gt = F.avg_pool2d(F.pad(gt, (1, 1, 1, 1), mode='reflect'), 3, 1)[0, 0].numpy()
        y = y + gt * rng.uniform(2, 8) / 255.0 * (0.5 + 2 * y * (1 - y))
    return np.clip(y, 0, 1).astype(np.float32)


def batch(pairs, rng, size, patch, scale, clean=0.0, jpeg=True):
    xs, ys = [], []
    while len(xs) < size:
        lr, hr = pairs[rng.randrange(len(pairs))]
        w, h = lr.size
        if w < patch or h < patch:
            continue
        x0, y0 = rng.randrange(w - patch + 1), rng.randrange(h - patch + 1)
        # a margin of 4 LR px so the JPEG blocks and the noise see real context
        m = 4
        cx0, cy0 = max(0, x0 - m), max(0, y0 - m)
        crop = lr.crop((cx0, cy0, min(w, x0 + patch + m), min(h, y0 + patch + m)))
        # --clean: this share of patches is kept as the reduction left it (no JPEG, noise or grain)
        yl = (luma(crop) if clean > 0 and rng.random() < clean else degrade(crop, rng, jpeg))[y0 - cy0:y0 - cy0 + patch, x0 - cx0:x0 - cx0 + patch]
        yh = hr[scale * y0:scale * (y0 + patch), scale * x0:scale * (x0 + patch)]
        k = rng.randrange(8)
        yl, yh = np.rot90(yl, k % 4), np.rot90(yh, k % 4)
        if k >= 4:
            yl, yh = yl[:, ::-1], yh[:, ::-1]
        xs.append(np.ascontiguousarray(yl))
        ys.append(np.ascontiguousarray(yh))
    return torch.from_numpy(np.stack(xs))[:, None], torch.from_numpy(np.stack(ys))[:, None]


def psnr_gain(net, pairs, scale):
    """Mean luma PSNR gain over Lanczos3 on held-out training photos (8-bit rounding, a border of 2x the scale)."""
    gains = []
    with torch.no_grad():
        for lr, hr in pairs:
            x = torch.from_numpy(luma(lr))[None, None]
            base = lanczos_up(x, scale)
            out = base + net(x)
            t = torch.from_numpy(hr)[None, None]
            def p(img):
                b = 2 * scale
                q = torch.round(img.clamp(0, 1) * 255)[..., b:-b, b:-b]
                mse = ((q - torch.round(t * 255)[..., b:-b, b:-b]) ** 2).mean().item()
                return 10 * math.log10(255 * 255 / mse)
            gains.append(p(out) - p(base))
    return sum(gains) / len(gains), min(gains)


def load_weights(path):
    """Weights saved by this script (.pt), or read back from an exported model (.onnx: the shipped
    models/upscaler-x2.onnx), so a fine-tune can start from what ships."""
    if not path.endswith('.onnx'):
        return torch.load(path)
    import onnx
    from onnx import numpy_helper
    prefix = 'net.'
    return {i.name[len(prefix):]: torch.from_numpy(numpy_helper.to_array(i).copy())
            for i in onnx.load(path).graph.initializer if i.name.startswith(prefix + 'body.')}


def embed(net, state):
    """Loads a narrower trained network into a wider one (issue 38 item 1) so that it computes exactly
    the same function: each trained layer's weights fill the first rows and columns; the new
    channels keep their random start on the way in and get zero weights on the way out, so they
    change nothing until training gives them a use (no symmetry to break, unlike copied channels)."""
    own = net.state_dict()
    for name, w in state.items():
        t = own[name].clone()
        if name.endswith('.weight'):
            o, i = w.shape[:2]
            t[:o, i:] = 0
            t[:o, :i] = w
        else:
            t[:w.shape[0]] = w
        own[name] = t
    net.load_state_dict(own)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--data', default=os.path.join(os.path.dirname(__file__), '../../../shared/datasets/sr/train'))
    ap.add_argument('--folders', default='urban100,t91,sunhays,mate')
    ap.add_argument('--scale', type=int, default=2, choices=(2, 4))
    ap.add_argument('--arch', default='plain', choices=('plain', 'unshuffle'), help='unshuffle: the video network (model.py UnshuffleNet), x2 only')
    ap.add_argument('--channels', type=int, default=32)
    ap.add_argument('--depth', type=int, default=6, help='3x3 convolutions between the first and the last')
    ap.add_argument('--minutes', type=float, default=60)
    ap.add_argument('--stop-minutes', type=float,
                    help='stop here, keeping the learning-rate schedule of --minutes (the shipped model forked from minute 41 of a 75-minute run)')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--batch', type=int, default=16)
    ap.add_argument('--patch', type=int, default=48)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--out', default='out')
    ap.add_argument('--init', help='start from these weights (fine-tuning): a weights.pt of this script, or an exported .onnx')
    ap.add_argument('--lr', type=float, default=1e-3)
    ap.add_argument('--eval-every', type=int, default=500, help='steps between held-out measurements (each takes time from the budget)')
    ap.add_argument('--harm', type=float, default=0.0,
                    help='weight of a penalty on patches the correction makes worse than Lanczos3 alone')
    ap.add_argument('--clean', type=float, default=0.0,
                    help='share of patches left without JPEG, noise or grain before the usual mix (0: every patch takes its chances)')
    ap.add_argument('--no-jpeg', action='store_true',
                    help='no JPEG pass in the degradations (noise and grain stay): a model for inputs from lossless files')
    ap.add_argument('--reductions', default=','.join(REDUCTIONS),
                    help='the reductions patches are drawn from; one named twice is drawn twice as often')
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    np.random.seed(args.seed)
    os.makedirs(args.out, exist_ok=True)

    truths = load_truths(args.data, args.folders.split(','), args.scale)
    # every 16th photo is held out for the learning curve (never eval/)
    held = [t for i, t in enumerate(truths) if i % 16 == 7]
    train = [t for i, t in enumerate(truths) if i % 16 != 7]
    reductions = args.reductions.split(',')
    assert all(r in REDUCTIONS for r in reductions), f'--reductions takes {REDUCTIONS}'
    pairs = make_pairs(train, args.scale, reductions)
    held_pairs = [(reduce_by(img, how, args.scale), luma(img)) for _, img in held for how in ('bicubic', 'area')]
    print(f'{len(train)} training photos, {len(held)} held out', flush=True)

    net = make_net(args.arch, args.channels, args.depth, args.scale)
    if args.init:
        state = load_weights(args.init)
        if any(state[k].shape != v.shape for k, v in net.state_dict().items()):
            embed(net, state)
        else:
            net.load_state_dict(state)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    budget = args.minutes * 60
    start = time.time()
    step = 0
    log = open(os.path.join(args.out, 'curve.tsv'), 'w')
    log.write('step\tminutes\tlr\tloss\theld_gain_db\theld_worst_db\n')
    running = 0.0
    while True:
        elapsed = time.time() - start
        frac = min(1.0, elapsed / budget)
        lr = args.lr * 0.5 * (1 + math.cos(math.pi * frac)) + 1e-6
        for g in opt.param_groups:
            g['lr'] = lr
        x, y = batch(pairs, rng, args.batch, args.patch, args.scale, args.clean, not args.no_jpeg)
        base = lanczos_up(x, args.scale)
        out = base + net(x)
        loss = F.l1_loss(out, y)
        if args.harm > 0:
            # Per patch: how much worse than Lanczos3 alone the correction made it (0 where it helped).
            # A plain mean loss lets a net trade a few patches made worse for many made better; this
            # makes the worse ones cost extra, the 'no image worse than Lanczos3' rule of issue 28.
            worse = ((out - y).abs().mean(dim=(1, 2, 3)) - (base - y).abs().mean(dim=(1, 2, 3))).clamp(min=0)
            loss = loss + args.harm * worse.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.item()
        step += 1
        if step % args.eval_every == 0 or frac >= 1.0 or (args.stop_minutes is not None and elapsed >= args.stop_minutes * 60):
            net.eval()
            gain, worst = psnr_gain(net, held_pairs, args.scale)
            net.train()
            line = f'{step}\t{elapsed / 60:.1f}\t{lr:.2e}\t{running / args.eval_every:.5f}\t{gain:.3f}\t{worst:.3f}'
            print(line, flush=True)
            log.write(line + '\n')
            log.flush()
            running = 0.0
            torch.save(net.state_dict(), os.path.join(args.out, 'weights.pt'))
        if frac >= 1.0 or (args.stop_minutes is not None and elapsed >= args.stop_minutes * 60):
            break
    net.eval()
    torch.save(net.state_dict(), os.path.join(args.out, 'weights.pt'))
    with open(os.path.join(args.out, 'provenance.json'), 'w') as f:
        json.dump({'folders': args.folders, 'scale': args.scale, 'arch': args.arch, 'channels': args.channels, 'depth': args.depth, 'minutes': args.minutes,
                   'steps': step, 'seed': args.seed, 'torch': torch.__version__,
                   'photos': [n for n, _ in train]}, f, indent=1)


if __name__ == '__main__':
    main()
