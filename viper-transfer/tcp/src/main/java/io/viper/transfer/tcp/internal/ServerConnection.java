package io.viper.transfer.tcp.internal;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.EmptyByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.viper.spi.ReadLease;
import io.viper.spi.SourceTracker;
import io.viper.spi.StagedCheckpoint;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One consumer connection of a {@link TcpServer}, once it passed the handshake: serves the {@link Request}s that
 * {@link RequestDecoder}, ahead of it in the pipeline, decodes. Lives on the connection's event loop: every field is
 * confined to it. Requests are handled strictly in arrival order; while a READ streams, later requests wait in a queue
 * (so that a pipelined RELEASE takes effect only after the bytes left); while more than 16 or
 * {@code viper.limits.buffer.bytes} of them wait, the socket is not read. Leases this connection holds are released
 * when it closes, whatever the reason.
 */
final class ServerConnection extends ChannelInboundHandlerAdapter {
    private static final System.Logger LOG = System.getLogger(ServerConnection.class.getName());
    /** Queued requests above which the connection stops reading from the socket until it caught up. */
    private static final int MAX_QUEUED = 16;

    private final TcpServer server;
    private final Map<Long, Lease> leases = new HashMap<>();
    private final ArrayDeque<Request> queue = new ArrayDeque<>();
    /** The lease the last LEASE took ({@link TcpProtocol#LAST_LEASE} names it); {@link #REFUSED} after a refusal. */
    private long lastLease = NO_LEASE;

    private static final long NO_LEASE = 0;
    private static final long REFUSED = -1;
    private Stream stream;
    private boolean failed;
    private String peer = "?";
    /**
     * Bytes of the requests waiting in {@link #queue}: reading stops while they exceed
     * {@code viper.limits.buffer.bytes}.
     */
    private long queuedBytes;
    /** When the last request arrived (System.nanoTime). */
    private long lastRequest = System.nanoTime();

    private record Lease(StagedCheckpoint staged, ReadLease lease, MemorySegment data) {}

    /** A request the server's state does not allow (unknown lease, range outside the data); closes the connection. */
    private static final class ProtocolException extends Exception {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message, null, false, false);
        }
    }

    ServerConnection(TcpServer server) {
        this.server = server;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        peer = String.valueOf(ctx.channel().remoteAddress());
        super.channelActive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (failed) {
            return;
        }
        lastRequest = System.nanoTime();
        Request r = (Request) msg;
        queue.add(r);
        queuedBytes += size(r);
        if (queue.size() > MAX_QUEUED || queuedBytes > server.security().bufferBytes()) {
            ctx.channel().config().setAutoRead(false);
        }
        drain(ctx);
    }

    /** About the bytes a queued request holds. */
    private static long size(Request r) {
        return r instanceof Request.Read read ? 16L + 16L * read.offsets().length : 16;
    }

    private void drain(ChannelHandlerContext ctx) {
        while (stream == null && !failed && !queue.isEmpty()) {
            Request next = queue.poll();
            queuedBytes -= size(next);
            try {
                handle(ctx, next);
            } catch (ProtocolException e) {
                fail(ctx, e.getMessage());
                return;
            }
        }
        if (stream == null
                && queue.isEmpty()
                && !failed
                && !ctx.channel().config().isAutoRead()) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    private void handle(ChannelHandlerContext ctx, Request request) throws ProtocolException {
        switch (request) {
            case Request.Lease r -> lease(ctx, r);
            case Request.Track r -> track(ctx, r);
            case Request.Read r -> {
                long id = resolve(r.leaseId());
                if (id != REFUSED) {
                    read(ctx, id, r);
                }
            }
            case Request.Release r -> {
                long id = resolve(r.leaseId());
                if (id == REFUSED) {
                    return; // the READs and RELEASE pipelined behind a refused LEASE are skipped, unanswered
                }
                Lease l = leases.remove(id);
                if (l == null) {
                    throw new ProtocolException("RELEASE of unknown lease " + r.leaseId());
                }
                l.lease().close();
                ByteBuf out = ctx.alloc().buffer(TcpProtocol.LENGTH_BYTES + TcpProtocol.HEADER_BYTES + 8);
                out.writeInt(TcpProtocol.HEADER_BYTES + 8)
                        .writeByte(TcpProtocol.VERSION)
                        .writeByte(TcpProtocol.RELEASED)
                        .writeLong(id);
                ctx.writeAndFlush(out).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
            }
        }
    }

    /** The lease a READ or RELEASE names: {@link TcpProtocol#LAST_LEASE} is the one the last LEASE took. */
    private long resolve(long leaseId) throws ProtocolException {
        if (leaseId != TcpProtocol.LAST_LEASE) {
            return leaseId;
        }
        if (lastLease == NO_LEASE) {
            throw new ProtocolException("lease " + TcpProtocol.LAST_LEASE + " named before any LEASE");
        }
        return lastLease;
    }

    private void lease(ChannelHandlerContext ctx, Request.Lease r) throws ProtocolException {
        if (leases.size() >= TcpProtocol.MAX_LEASES_PER_CONNECTION) {
            throw new ProtocolException(
                    "more than " + TcpProtocol.MAX_LEASES_PER_CONNECTION + " open leases on one connection");
        }
        lastLease = REFUSED; // until granted below
        String what = r.model() + " v" + r.version();
        StagedCheckpoint staged = server.find(r.model(), r.version());
        if (staged == null) {
            notAvailable(ctx, what + " is not served by " + server.uri() + " (withdrawn or never exposed)");
            return;
        }
        ReadLease lease;
        try {
            lease = staged.tryLease();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "tcp transport " + server.uri() + ": taking a lease on " + what + " failed: " + e);
            notAvailable(ctx, what + ": lease refused by the producer: " + e.getMessage());
            return;
        }
        if (lease == null) {
            notAvailable(ctx, what + " is being recycled on " + server.uri());
            return;
        }
        if (!server.isExposed(staged)) {
            lease.close();
            notAvailable(ctx, what + " was withdrawn from " + server.uri());
            return;
        }
        MemorySegment data = staged.data();
        long id = server.nextLeaseId();
        leases.put(id, new Lease(staged, lease, data));
        lastLease = id;
        ByteBuf out = ctx.alloc().buffer(TcpProtocol.LENGTH_BYTES + TcpProtocol.HEADER_BYTES + 16);
        out.writeInt(TcpProtocol.HEADER_BYTES + 16)
                .writeByte(TcpProtocol.VERSION)
                .writeByte(TcpProtocol.LEASED)
                .writeLong(id)
                .writeLong(data.byteSize());
        ctx.writeAndFlush(out).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
    }

    /** Answers where the reader should read from: the tracker's choice, or this server (no tracker, or it failed). */
    private void track(ChannelHandlerContext ctx, Request.Track r) {
        SourceTracker tracker = server.tracker();
        List<URI> sources = List.of();
        if (tracker != null) {
            try {
                sources = tracker.assign(r.model(), r.version(), r.relay(), r.failed());
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "tcp transport " + server.uri() + ": the tracker failed: " + e);
            }
        }
        byte[] list = TcpProtocol.uriList(sources);
        int size = TcpProtocol.HEADER_BYTES + list.length;
        ByteBuf out = ctx.alloc().buffer(TcpProtocol.LENGTH_BYTES + size);
        out.writeInt(size)
                .writeByte(TcpProtocol.VERSION)
                .writeByte(TcpProtocol.SOURCES)
                .writeBytes(list);
        ctx.writeAndFlush(out).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
    }

    private void notAvailable(ChannelHandlerContext ctx, String reason) {
        LOG.log(Level.DEBUG, () -> "tcp transport " + server.uri() + ": refused lease to " + peer + ": " + reason);
        byte[] text = TcpProtocol.reasonBytes(reason);
        ByteBuf out = ctx.alloc().buffer(TcpProtocol.LENGTH_BYTES + TcpProtocol.HEADER_BYTES + 2 + text.length);
        out.writeInt(TcpProtocol.HEADER_BYTES + 2 + text.length)
                .writeByte(TcpProtocol.VERSION)
                .writeByte(TcpProtocol.NOT_AVAILABLE)
                .writeShort(text.length)
                .writeBytes(text);
        ctx.writeAndFlush(out).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
    }

    private void read(ChannelHandlerContext ctx, long leaseId, Request.Read r) throws ProtocolException {
        Lease l = leases.get(leaseId);
        if (l == null) {
            throw new ProtocolException("READ on unknown lease " + r.leaseId());
        }
        long size = l.data().byteSize();
        long total = 0;
        for (int i = 0; i < r.offsets().length; i++) {
            long off = r.offsets()[i];
            long len = r.lengths()[i];
            if (off > size || len > size - off) {
                throw new ProtocolException("READ range " + off + "+" + len + " lies outside the " + size + " bytes of "
                        + l.staged().model() + " v" + l.staged().version());
            }
            total += len;
        }
        ByteBuf header = ctx.alloc().buffer(TcpProtocol.LENGTH_BYTES + TcpProtocol.HEADER_BYTES + 8);
        header.writeInt(TcpProtocol.HEADER_BYTES + 8)
                .writeByte(TcpProtocol.VERSION)
                .writeByte(TcpProtocol.DATA)
                .writeLong(total);
        ctx.write(header).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        stream = new Stream(l.staged(), l.data(), r.offsets(), r.lengths(), server.chunkBytes());
        pump(ctx);
    }

    /**
     * Writes chunks of the current stream while the channel is writable and the version readable; resumes on
     * writability, or when more of a relayed version verified ({@link StagedCheckpoint#onReadable}). Idempotent: a
     * wake-up with nothing to do does nothing.
     */
    private void pump(ChannelHandlerContext ctx) {
        while (stream != null && ctx.channel().isWritable()) {
            ByteBuf chunk = stream.next();
            if (chunk == Stream.WAIT) {
                Stream waiting = stream;
                waiting.staged.onReadable(() -> ctx.executor().execute(() -> {
                    if (stream == waiting) {
                        pump(ctx);
                    }
                }));
                // Readiness that came between the check and the registration is not missed.
                if (waiting.readableNow()) {
                    continue;
                }
                break;
            }
            if (chunk == Stream.ABANDONED) {
                // The bytes already written were verified: they reach the reader before the connection ends.
                LOG.log(
                        Level.INFO,
                        "tcp transport " + server.uri() + ": the relayed " + stream.staged.model() + " v"
                                + stream.staged.version() + " was abandoned; closing the stream to " + peer);
                failed = true;
                stream = null;
                queue.clear();
                ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            if (chunk == null) {
                stream = null;
                break;
            }
            ctx.write(chunk).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        }
        ctx.flush();
        if (stream == null) {
            drain(ctx);
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
        if (stream != null && ctx.channel().isWritable()) {
            pump(ctx);
        }
        super.channelWritabilityChanged(ctx);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof IdleStateEvent e) {
            long silentMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lastRequest);
            if (e.state() == IdleState.WRITER_IDLE && stream != null) {
                fail(ctx, "the consumer read nothing for " + server.timeoutMs() + " ms");
            } else if (e.state() == IdleState.READER_IDLE
                    && stream == null
                    && !leases.isEmpty()
                    && silentMs >= server.timeoutMs()) {
                fail(
                        ctx,
                        "the consumer held " + leases.size() + " lease(s) without a request for " + server.timeoutMs()
                                + " ms");
            } else if (e.state() == IdleState.READER_IDLE
                    && stream == null
                    && leases.isEmpty()
                    && silentMs >= server.security().idleMs()) {
                LOG.log(
                        Level.DEBUG,
                        () -> "tcp transport " + server.uri() + ": closing the idle connection from " + peer);
                ctx.close();
            }
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        stream = null;
        queue.clear();
        queuedBytes = 0;
        if (!leases.isEmpty()) {
            LOG.log(
                    Level.DEBUG,
                    () -> "tcp transport " + server.uri() + ": connection from " + peer + " closed; releasing "
                            + leases.size() + " lease(s)");
            for (Lease l : leases.values()) {
                l.lease().close();
            }
            leases.clear();
        }
        super.channelInactive(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof RequestDecoder.MalformedRequestException) {
            fail(ctx, cause.getMessage());
        } else if (cause instanceof DecoderException) {
            fail(ctx, "malformed frame: " + cause.getMessage());
        } else if (cause instanceof IOException) {
            LOG.log(
                    Level.DEBUG,
                    () -> "tcp transport " + server.uri() + ": connection from " + peer + " broke: "
                            + cause.getMessage());
            ctx.close();
        } else {
            LOG.log(
                    Level.WARNING,
                    "tcp transport " + server.uri() + ": closing connection from " + peer
                            + " after an unexpected error",
                    cause);
            ctx.close();
        }
    }

    /** Logs {@code reason}, tells the client when no stream is in flight, and closes the connection. */
    private void fail(ChannelHandlerContext ctx, String reason) {
        if (failed) {
            return;
        }
        failed = true;
        LOG.log(Level.WARNING, "tcp transport " + server.uri() + ": closing connection from " + peer + ": " + reason);
        queue.clear();
        if (stream == null && ctx.channel().isActive()) {
            byte[] text = TcpProtocol.reasonBytes(reason);
            ByteBuf out = ctx.alloc().buffer(TcpProtocol.LENGTH_BYTES + TcpProtocol.HEADER_BYTES + 2 + text.length);
            out.writeInt(TcpProtocol.HEADER_BYTES + 2 + text.length)
                    .writeByte(TcpProtocol.VERSION)
                    .writeByte(TcpProtocol.ERROR)
                    .writeShort(text.length)
                    .writeBytes(text);
            ctx.writeAndFlush(out).addListener(ChannelFutureListener.CLOSE);
        } else {
            stream = null;
            ctx.close();
        }
    }

    /**
     * The ranges of one READ, cut into zero-copy slices of the staged memory, each as far as the version is readable.
     */
    private static final class Stream {
        /** {@link #next()}: the next bytes are not readable yet. */
        static final ByteBuf WAIT = new EmptyByteBuf(UnpooledByteBufAllocator.DEFAULT);
        /** {@link #next()}: the version was abandoned; nothing more will be readable. */
        static final ByteBuf ABANDONED = new EmptyByteBuf(UnpooledByteBufAllocator.DEFAULT);

        private final StagedCheckpoint staged;
        private final MemorySegment data;
        private final long[] offsets;
        private final long[] lengths;
        private final int chunk;
        private int index;
        private long position;

        Stream(StagedCheckpoint staged, MemorySegment data, long[] offsets, long[] lengths, int chunk) {
            this.staged = staged;
            this.data = data;
            this.offsets = offsets;
            this.lengths = lengths;
            this.chunk = chunk;
        }

        /** The next slice, or null when every range was handed out. */
        ByteBuf next() {
            while (index < offsets.length && position == lengths[index]) {
                index++;
                position = 0;
            }
            if (index == offsets.length) {
                return null;
            }
            long want = Math.min(chunk, lengths[index] - position);
            long n = staged.readable(offsets[index] + position, want);
            if (n < 0) {
                return ABANDONED;
            }
            if (n == 0) {
                return WAIT;
            }
            ByteBuf slice = Unpooled.wrappedBuffer(
                    data.asSlice(offsets[index] + position, n).asByteBuffer());
            position += n;
            staged.served(n);
            return slice;
        }

        /** Whether the next bytes are readable now (or the version was abandoned: {@link #next} says so). */
        boolean readableNow() {
            if (index == offsets.length || position == lengths[index]) {
                return true;
            }
            return staged.readable(offsets[index] + position, 1) != 0;
        }
    }
}
