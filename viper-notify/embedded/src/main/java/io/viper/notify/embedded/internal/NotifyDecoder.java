package io.viper.notify.embedded.internal;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.MessageToMessageDecoder;
import io.viper.notify.embedded.internal.NotifyProtocol.ProtocolException;
import java.util.List;

/**
 * Turns one frame of the embedded broker protocol (length prefix already stripped by
 * {@link NotifyProtocol#frameDecoder()} ahead of it) into a {@link NotifyMessage} for the handler behind it: the
 * broker's connection handler reads the client's frames ({@link #fromClients()}), the notifier's handler the broker's
 * ({@link #fromBroker()}). A frame that breaks the protocol, or that the other side does not send, raises a
 * {@link MalformedFrameException} whose message names the problem; the handler closes the connection with it. One
 * instance per connection, on its event loop.
 */
final class NotifyDecoder extends MessageToMessageDecoder<ByteBuf> {

    /** A frame that is not a well-formed message for this side; its message is the one-line reason. */
    static final class MalformedFrameException extends CorruptedFrameException {
        private static final long serialVersionUID = 1L;

        MalformedFrameException(String message) {
            super(message);
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this; // a peer's mistake, not ours: the message says it all
        }
    }

    private final boolean brokerSide;

    private NotifyDecoder(boolean brokerSide) {
        super(ByteBuf.class);
        this.brokerSide = brokerSide;
    }

    /** For the broker: reads HELLO, SUBSCRIBE, UNSUBSCRIBE, PUBLISH and LATEST. */
    static NotifyDecoder fromClients() {
        return new NotifyDecoder(true);
    }

    /** For a client: reads WELCOME, MANIFEST, ACK and ERROR. */
    static NotifyDecoder fromBroker() {
        return new NotifyDecoder(false);
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf frame, List<Object> out) {
        try {
            byte type = NotifyProtocol.readHeader(frame);
            out.add(brokerSide ? clientMessage(type, frame) : brokerMessage(type, frame));
        } catch (ProtocolException e) {
            throw new MalformedFrameException(e.getMessage());
        }
    }

    private static NotifyMessage clientMessage(byte type, ByteBuf f) throws ProtocolException {
        return switch (type) {
            case NotifyProtocol.HELLO -> {
                NotifyProtocol.end(f, "HELLO");
                yield new NotifyMessage.Hello();
            }
            case NotifyProtocol.SUBSCRIBE -> {
                String model = NotifyProtocol.readModel(f, "SUBSCRIBE");
                NotifyProtocol.end(f, "SUBSCRIBE");
                yield new NotifyMessage.Subscribe(model);
            }
            case NotifyProtocol.UNSUBSCRIBE -> {
                String model = NotifyProtocol.readModel(f, "UNSUBSCRIBE");
                NotifyProtocol.end(f, "UNSUBSCRIBE");
                yield new NotifyMessage.Unsubscribe(model);
            }
            case NotifyProtocol.PUBLISH -> {
                NotifyProtocol.need(f, 8, "PUBLISH");
                long requestId = f.readLong();
                String model = NotifyProtocol.readModel(f, "PUBLISH");
                yield new NotifyMessage.Publish(requestId, model, NotifyProtocol.readAnnouncement(f, "PUBLISH"));
            }
            case NotifyProtocol.LATEST -> {
                NotifyProtocol.need(f, 8, "LATEST");
                long requestId = f.readLong();
                String model = NotifyProtocol.readModel(f, "LATEST");
                NotifyProtocol.end(f, "LATEST");
                yield new NotifyMessage.Latest(requestId, model);
            }
            default -> throw new ProtocolException("unexpected frame type " + NotifyProtocol.typeName(type));
        };
    }

    private static NotifyMessage brokerMessage(byte type, ByteBuf f) throws ProtocolException {
        return switch (type) {
            case NotifyProtocol.WELCOME -> {
                NotifyProtocol.need(f, 8, "WELCOME");
                long idleMs = f.readLong();
                NotifyProtocol.end(f, "WELCOME");
                if (idleMs <= 0) {
                    throw new ProtocolException("WELCOME with an idle time of " + idleMs + " ms");
                }
                yield new NotifyMessage.Welcome(idleMs);
            }
            case NotifyProtocol.MANIFEST -> {
                String model = NotifyProtocol.readModel(f, "MANIFEST");
                yield new NotifyMessage.Manifest(model, NotifyProtocol.readAnnouncement(f, "MANIFEST"));
            }
            case NotifyProtocol.ACK -> {
                NotifyProtocol.need(f, 17, "ACK");
                NotifyMessage.Ack ack = new NotifyMessage.Ack(f.readLong(), f.readByte(), f.readLong());
                NotifyProtocol.end(f, "ACK");
                yield ack;
            }
            case NotifyProtocol.ERROR -> {
                NotifyProtocol.need(f, 9, "ERROR");
                long requestId = f.readLong();
                byte code = f.readByte();
                String reason = NotifyProtocol.readReason(f, "ERROR");
                NotifyProtocol.end(f, "ERROR");
                yield new NotifyMessage.Error(requestId, code, reason);
            }
            default -> throw new ProtocolException("unexpected frame type " + NotifyProtocol.typeName(type));
        };
    }
}
